// <metal_relational> and <metal_geometric> (original code).
#pragma once

namespace mslemu {
namespace relational {
template <class R, int N = comp<R>::n> using bools_t = std::conditional_t<N == 1, bool, metal::vec<bool, N>>;
template <class A, class F> MSLEMU_AI auto test(const A& a, F f) {
  using V = val_t<A>;
  bools_t<V> r;
  V v = val(a);
  for (int i = 0; i < comp<V>::n; ++i) {
    if constexpr (comp<V>::n == 1) r = f((float)v); else r[i] = f((float)v[i]);
  }
  return r;
}
template <class A> inline constexpr bool ftest_v = is_float_elem_v<val_t<A>>;
#define MSLEMU_REL1(name, expr) \
  template <class A, class = std::enable_if_t<ftest_v<A>>> MSLEMU_FN auto name(const A& a) { \
    return test(a, [](float x) -> bool { return expr; }); }
MSLEMU_REL1(isnan, __builtin_isnan(x)) MSLEMU_REL1(isinf, __builtin_isinf(x)) MSLEMU_REL1(isfinite, __builtin_isfinite(x))
MSLEMU_REL1(isnormal, __builtin_isnormal(x)) MSLEMU_REL1(signbit, __builtin_signbit(x) != 0)
#undef MSLEMU_REL1
template <class A, class B, class = std::enable_if_t<ftest_v<A> && ftest_v<B>>> MSLEMU_FN auto isordered(const A& a, const B& b) {
  using V = amix_t<val_t<A>, val_t<B>>;
  bools_t<V> r;
  for (int i = 0; i < comp<V>::n; ++i) {
    bool o = !__builtin_isnan(fcomp(val(a), i)) && !__builtin_isnan(fcomp(val(b), i));
    if constexpr (comp<V>::n == 1) r = o; else r[i] = o;
  }
  return r;
}
template <class A, class B, class = std::enable_if_t<ftest_v<A> && ftest_v<B>>> MSLEMU_FN auto isunordered(const A& a, const B& b) {
  return !isordered(a, b);
}
// all(b), any(b): of every component of a bool vector
template <class A, class = std::enable_if_t<std::is_same_v<typename comp<val_t<A>>::type, bool>>> MSLEMU_FN bool all(const A& a) {
  auto v = val(a);
  for (int i = 0; i < comp<val_t<A>>::n; ++i) if (!ecomp(v, i)) return false;
  return true;
}
template <class A, class = std::enable_if_t<std::is_same_v<typename comp<val_t<A>>::type, bool>>> MSLEMU_FN bool any(const A& a) {
  auto v = val(a);
  for (int i = 0; i < comp<val_t<A>>::n; ++i) if (ecomp(v, i)) return true;
  return false;
}
// select(a, b, c): c ? b : a, per component. A scalar c of another arithmetic type converts
// to bool, as any scalar argument does for Metal's `T select(T, T, bool)` (llama.cpp's
// `select(1, -1, signs[0] & mask)`); a vector c must be a bool vector, as in Metal
template <class C> inline constexpr bool select_cond_v =
    std::is_same_v<typename comp<val_t<C>>::type, bool> || (comp<val_t<C>>::n == 1 && is_arith_v<val_t<C>>);
template <class A, class B, class C, class R = amix_t<val_t<A>, val_t<B>>,
          class = std::enable_if_t<same_lengths_v<val_t<A>, val_t<B>, val_t<C>> && select_cond_v<C>>>
MSLEMU_FN R select(const A& a, const B& b, const C& c) {
  using E = typename comp<R>::type;
  R va = (R)val(a), vb = (R)val(b);
  auto vc = val(c);
  if constexpr (comp<R>::n == 1) return (bool)vc ? vb : va;
  else {
    R r;
    for (int i = 0; i < comp<R>::n; ++i) r[i] = (bool)ecomp(vc, i) ? (E)vb[i] : (E)va[i];
    return r;
  }
}
}  // namespace relational

namespace geometric {
template <class A> using gv_t = val_t<A>;
template <class A, class B> inline constexpr bool same_vec_v =
    comp<val_t<A>>::n > 1 && std::is_same_v<val_t<A>, val_t<B>>;
template <class A, class B, class = std::enable_if_t<same_vec_v<A, B>>> MSLEMU_FN auto dot(const A& a, const B& b) {
  using V = val_t<A>;
  using E = typename comp<V>::type;
  V x = val(a), y = val(b);
  if constexpr (std::is_integral_v<E>) {
    E s = 0;
    for (int i = 0; i < V::size; ++i) s += x[i] * y[i];
    return s;
  } else {
    float s = 0;
    for (int i = 0; i < V::size; ++i) s = __builtin_fmaf((float)x[i], (float)y[i], s);
    return (E)s;
  }
}
template <class A, class = std::enable_if_t<(comp<val_t<A>>::n > 1) && is_float_elem_v<val_t<A>>>>
MSLEMU_FN auto length_squared(const A& a) { return dot(val(a), val(a)); }
template <class A, class = std::enable_if_t<(comp<val_t<A>>::n > 1) && is_float_elem_v<val_t<A>>>>
MSLEMU_FN auto length(const A& a) {
  using V = val_t<A>;
  V x = val(a);
  double s = 0;
  for (int i = 0; i < V::size; ++i) s += (double)(float)x[i] * (double)(float)x[i];
  return (typename comp<V>::type)(float)__builtin_sqrt(s);
}
template <class A, class B, class = std::enable_if_t<same_vec_v<A, B> && is_float_elem_v<val_t<A>>>>
MSLEMU_FN auto distance(const A& a, const B& b) { return length(val(a) - val(b)); }
template <class A, class B, class = std::enable_if_t<same_vec_v<A, B> && is_float_elem_v<val_t<A>>>>
MSLEMU_FN auto distance_squared(const A& a, const B& b) { return length_squared(val(a) - val(b)); }
template <class A, class = std::enable_if_t<(comp<val_t<A>>::n > 1) && is_float_elem_v<val_t<A>>>>
MSLEMU_FN val_t<A> normalize(const A& a) {
  using V = val_t<A>;
  V x = val(a), r;
  float len = (float)length(x);
  for (int i = 0; i < V::size; ++i) r[i] = (typename comp<V>::type)((float)x[i] / len);
  return r;
}
template <class A, class B, class = std::enable_if_t<same_vec_v<A, B> && val_t<A>::size == 3>>
MSLEMU_FN val_t<A> cross(const A& a, const B& b) {
  using V = val_t<A>;
  using E = typename comp<V>::type;
  V x = val(a), y = val(b);
  return V((E)((float)x[1] * (float)y[2] - (float)x[2] * (float)y[1]),
           (E)((float)x[2] * (float)y[0] - (float)x[0] * (float)y[2]),
           (E)((float)x[0] * (float)y[1] - (float)x[1] * (float)y[0]));
}
// faceforward(n, i, nref): n if dot(nref, i) < 0, else -n
template <class A, class B, class C, class = std::enable_if_t<same_vec_v<A, B> && same_vec_v<A, C>>>
MSLEMU_FN val_t<A> faceforward(const A& n, const B& i, const C& nref) {
  return (float)dot(val(nref), val(i)) < 0.0f ? val(n) : -val(n);
}
// reflect(i, n): i - 2 dot(n, i) n  (n normalized)
template <class A, class B, class = std::enable_if_t<same_vec_v<A, B>>> MSLEMU_FN val_t<A> reflect(const A& i, const B& n) {
  using V = val_t<A>;
  using E = typename comp<V>::type;
  V vi = val(i), vn = val(n), r;
  float d = (float)dot(vn, vi);
  for (int k = 0; k < V::size; ++k) r[k] = (E)((float)vi[k] - 2.0f * d * (float)vn[k]);
  return r;
}
// refract(i, n, eta): 0 on total internal reflection
template <class A, class B, class C, class = std::enable_if_t<same_vec_v<A, B>>>
MSLEMU_FN val_t<A> refract(const A& i, const B& n, const C& eta_) {
  using V = val_t<A>;
  using E = typename comp<V>::type;
  V vi = val(i), vn = val(n), r;
  float eta = (float)val(eta_), d = (float)dot(vn, vi);
  float k = 1.0f - eta * eta * (1.0f - d * d);
  for (int c = 0; c < V::size; ++c)
    r[c] = k < 0.0f ? (E)0 : (E)(eta * (float)vi[c] - (eta * d + __builtin_sqrtf(k)) * (float)vn[c]);
  return r;
}
}  // namespace geometric
}  // namespace mslemu

#define MSLEMU_RELATIONAL_LIST(X) X(all) X(any) X(isnan) X(isinf) X(isfinite) X(isnormal) X(signbit) X(isordered) X(isunordered) X(select)
#define MSLEMU_GEOMETRIC_LIST(X) X(dot) X(length) X(length_squared) X(distance) X(distance_squared) X(normalize) \
  X(cross) X(faceforward) X(reflect) X(refract)
#define MSLEMU_USING_REL(name) using ::mslemu::relational::name;
#define MSLEMU_USING_GEO(name) using ::mslemu::geometric::name;
namespace metal {
MSLEMU_RELATIONAL_LIST(MSLEMU_USING_REL)
MSLEMU_GEOMETRIC_LIST(MSLEMU_USING_GEO)
namespace fast { MSLEMU_GEOMETRIC_LIST(MSLEMU_USING_GEO) }
namespace precise { MSLEMU_GEOMETRIC_LIST(MSLEMU_USING_GEO) }
}  // namespace metal
#undef MSLEMU_USING_REL
#undef MSLEMU_USING_GEO
