// Vector elements of threadgroup memory (original code).
//
// `tile[i]` for a `threadgroup float4* tile` is a tg_vref: reading it (converting it to a
// float4) records a read of every component, assigning to it records writes, and its
// members `.x`, `.yz`, `.rgba`... (tg_swz) record exactly the components they touch. The
// members are a union of structs that each start with the same pointer, so every member
// knows which vector it belongs to.
#pragma once

namespace mslemu {

template <class S, int... I> struct tg_swz {
  S* p;
  using T = std::remove_cv_t<typename S::value_type>;
  static constexpr int K = sizeof...(I);
  using V = std::conditional_t<K == 1, T, metal::vec<T, K>>;
  MSLEMU_AI V get(const void* pc) const {
    if constexpr (K == 1) {
      constexpr int idx[] = {I...};
      tg_read(&p->e[idx[0]], pc);
      return p->e[idx[0]];
    } else {
      V r; int k = 0;
      ((tg_read(&p->e[I], pc), r[k++] = p->e[I]), ...);
      return r;
    }
  }
  MSLEMU_AI void set(const V& v, const void* pc) const {
    static_assert(metal::distinct_indices<I...>(), "a swizzle that repeats a component cannot be assigned to");
    if constexpr (K == 1) {
      constexpr int idx[] = {I...};
      tg_write(&p->e[idx[0]], pc);
      p->e[idx[0]] = v;
    } else {
      int k = 0;
      ((tg_write(&p->e[I], pc), p->e[I] = v[k++]), ...);
    }
  }
  MSLEMU_AI operator V() const { return get(here()); }
  template <class U, class = std::enable_if_t<K == 1 && is_arith_v<U> && !std::is_same_v<U, T>>>
  MSLEMU_AI explicit operator U() const { return (U)get(here()); }
  MSLEMU_AI const tg_swz& operator=(const V& v) const { set(v, here()); return *this; }
  MSLEMU_AI const tg_swz& operator=(const tg_swz& o) const { V v = o.get(here()); set(v, here()); return *this; }
#define MSLEMU_TGSOP(op)                                                       \
  template <class B> MSLEMU_AI const tg_swz& operator op##=(const B& b) const { \
    const void* pc = here(); V r = (V)(get(pc) op b); set(r, pc); return *this; }
  MSLEMU_TGSOP(+) MSLEMU_TGSOP(-) MSLEMU_TGSOP(*) MSLEMU_TGSOP(/) MSLEMU_TGSOP(%) MSLEMU_TGSOP(&) MSLEMU_TGSOP(|)
  MSLEMU_TGSOP(^) MSLEMU_TGSOP(<<) MSLEMU_TGSOP(>>)
#undef MSLEMU_TGSOP
  MSLEMU_AI V operator++(int) const { const void* pc = here(); V v = get(pc); set(v + 1, pc); return v; }
  MSLEMU_AI V operator--(int) const { const void* pc = here(); V v = get(pc); set(v - 1, pc); return v; }
  MSLEMU_AI const tg_swz& operator++() const { const void* pc = here(); set(get(pc) + 1, pc); return *this; }
  MSLEMU_AI const tg_swz& operator--() const { const void* pc = here(); set(get(pc) - 1, pc); return *this; }
  MSLEMU_AI auto operator&() const {
    static_assert(K == 1, "cannot take the address of a swizzle");
    constexpr int idx[] = {I...};
    return ptr<AS_THREADGROUP, typename S::value_type>(&p->e[idx[0]]);
  }
  MSLEMU_AI T operator[](int i) const { return V(get(here()))[i]; }
};

template <class S> struct tg_vref_base {
  S* p;
  using T = std::remove_cv_t<typename S::value_type>;
  static constexpr int N = S::size;
  using V = metal::vec<T, N>;
  MSLEMU_AI V get(const void* pc) const {
    V r;
    for (int i = 0; i < N; ++i) { tg_read(&p->e[i], pc); r[i] = p->e[i]; }
    return r;
  }
  MSLEMU_AI void set(const V& v, const void* pc) const {
    for (int i = 0; i < N; ++i) { tg_write(&p->e[i], pc); p->e[i] = v[i]; }
  }
};

#define MSLEMU_TSWZ(name, ...) tg_swz<S, __VA_ARGS__> name;
#define MSLEMU_TGVREF_MEMBERS(N) \
  union { tg_vref_base<S> base_; MSLEMU_COMPONENTS_##N(MSLEMU_TSWZ) MSLEMU_SWIZZLES_##N(MSLEMU_TSWZ) };
template <class S, int N = S::size> struct tg_vref_members;
template <class S> struct tg_vref_members<S, 2> { MSLEMU_TGVREF_MEMBERS(2) };
template <class S> struct tg_vref_members<S, 3> { MSLEMU_TGVREF_MEMBERS(3) };
template <class S> struct tg_vref_members<S, 4> { MSLEMU_TGVREF_MEMBERS(4) };
#undef MSLEMU_TGVREF_MEMBERS
#undef MSLEMU_TSWZ

template <class S> struct tg_vref : tg_vref_members<S> {
  using T = typename tg_vref_base<S>::T;
  using V = typename tg_vref_base<S>::V;
  static constexpr int N = S::size;
  MSLEMU_AI tg_vref(S* q) { this->base_.p = q; }
  MSLEMU_AI tg_vref(const tg_vref& o) { this->base_.p = o.base_.p; }
  MSLEMU_AI S* addr() const { return this->base_.p; }
  MSLEMU_AI V get(const void* pc) const { return this->base_.get(pc); }
  MSLEMU_AI operator V() const { return get(here()); }
  template <class U, class = std::enable_if_t<!std::is_same_v<std::remove_cv_t<S>, V> && std::is_same_v<U, std::remove_cv_t<S>>>>
  MSLEMU_AI operator U() const { return U(get(here())); }
  template <class U, class = std::enable_if_t<!std::is_same_v<U, T>>>
  MSLEMU_AI explicit operator metal::vec<U, N>() const { return metal::vec<U, N>(get(here())); }
  MSLEMU_AI const tg_vref& operator=(const V& v) const { this->base_.set(v, here()); return *this; }
  MSLEMU_AI const tg_vref& operator=(const tg_vref& o) const { V v = o.get(here()); this->base_.set(v, here()); return *this; }
  template <class U, class = std::enable_if_t<!std::is_same_v<std::remove_cv_t<U>, V> &&
                                              std::is_convertible_v<const U&, V>>>
  MSLEMU_AI const tg_vref& operator=(const U& v) const { V w = v; this->base_.set(w, here()); return *this; }
#define MSLEMU_TGVOP(op)                                                        \
  template <class B> MSLEMU_AI const tg_vref& operator op##=(const B& b) const { \
    const void* pc = here(); V r = get(pc) op b; this->base_.set(r, pc); return *this; }
  MSLEMU_TGVOP(+) MSLEMU_TGVOP(-) MSLEMU_TGVOP(*) MSLEMU_TGVOP(/) MSLEMU_TGVOP(%) MSLEMU_TGVOP(&) MSLEMU_TGVOP(|)
  MSLEMU_TGVOP(^) MSLEMU_TGVOP(<<) MSLEMU_TGVOP(>>)
#undef MSLEMU_TGVOP
  MSLEMU_AI auto operator[](int i) const { return tg_ref<typename S::value_type>{&addr()->e[i]}; }
  MSLEMU_AI ptr<AS_THREADGROUP, S> operator&() const { return ptr<AS_THREADGROUP, S>(addr()); }
};

// `p->x` for a pointer to a threadgroup vector
template <class S> struct tg_varrow {
  tg_vref<S> r;
  MSLEMU_AI const tg_vref<S>* operator->() const { return &r; }
};

template <class X> struct is_tg_vproxy : std::false_type {};
template <class S> struct is_tg_vproxy<tg_vref<S>> : std::true_type {};
template <class S, int... I> struct is_tg_vproxy<tg_swz<S, I...>> : std::bool_constant<(sizeof...(I) > 1)> {};

}  // namespace mslemu
