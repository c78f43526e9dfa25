// Values of proxies (original code).
//
// Several shim types stand for a value without being it: a threadgroup element (tg_ref,
// tg_vref, tg_swz, tg_obj_ref, tg_var), a register swizzle (swz), a packed vector and a
// uniform<T>. C++ does not deduce a template parameter through a conversion, so a library
// template called with one of them would not match (or would deduce the proxy itself).
// Every library template in the shim therefore takes its arguments as `const A&` and works
// on `val_t<A>`, the type of the value the proxy stands for, obtained by `val(a)`.
#pragma once

namespace mslemu {

template <class X> struct unproxy { using type = X; };
template <class T> struct unproxy<tg_ref<T>> { using type = std::remove_cv_t<T>; };
template <class T> struct unproxy<tg_obj_ref<T>> { using type = std::remove_cv_t<T>; };
template <class T> struct unproxy<tg_var<T>> { using type = std::remove_cv_t<T>; };
template <class S> struct unproxy<tg_vref<S>> { using type = typename tg_vref<S>::V; };
template <class S, int... I> struct unproxy<tg_swz<S, I...>> { using type = typename tg_swz<S, I...>::V; };
template <class T, int N, int... I> struct unproxy<metal::swz<T, N, I...>> { using type = metal::vec<T, sizeof...(I)>; };
template <class T, int N> struct unproxy<metal::packed_vec<T, N>> { using type = metal::vec<T, N>; };

template <class X> using remove_cvref_t = std::remove_cv_t<std::remove_reference_t<X>>;
template <class X> using val_t = typename unproxy<remove_cvref_t<X>>::type;
template <class X> inline constexpr bool is_proxy_v = !std::is_same_v<val_t<X>, remove_cvref_t<X>>;
template <class... X> inline constexpr bool any_proxy_v = (is_proxy_v<X> || ...);

template <class X> MSLEMU_AI constexpr val_t<X> val(const X& x) {
  if constexpr (is_proxy_v<X>) return (val_t<X>)x;
  else return x;
}
// proxies of threadgroup memory
template <class X> struct is_tg_proxy : std::false_type {};
template <class T> struct is_tg_proxy<tg_ref<T>> : std::true_type {};
template <class T> struct is_tg_proxy<tg_var<T>> : std::true_type {};
template <class S> struct is_tg_proxy<tg_vref<S>> : std::true_type {};
template <class S, int... I> struct is_tg_proxy<tg_swz<S, I...>> : std::true_type {};

// `auto v = tile[i];` copies the value, as in Metal (the rewriter wraps such initializers);
// packed vectors and uniform values keep their own type
template <class X> struct decays : is_tg_proxy<X> {};
template <class T> struct decays<tg_obj_ref<T>> : std::true_type {};
template <class T, int N, int... I> struct decays<metal::swz<T, N, I...>> : std::true_type {};
template <class X> MSLEMU_AI constexpr decltype(auto) decay_val(X&& x) {
  if constexpr (decays<remove_cvref_t<X>>::value) return val_t<X>(x);
  else return std::forward<X>(x);
}

// a threadgroup object of class type (tg_obj_ref: not a tg_proxy, whose value is a scalar or a vector)
template <class X> struct is_tg_obj_ref : std::false_type {};
template <class T> struct is_tg_obj_ref<tg_obj_ref<T>> : std::true_type {};
template <class A, class B> inline constexpr bool tg_operands_v =
    is_tg_proxy<remove_cvref_t<A>>::value || is_tg_proxy<remove_cvref_t<B>>::value ||
    is_tg_obj_ref<remove_cvref_t<A>>::value || is_tg_obj_ref<remove_cvref_t<B>>::value;
template <class A, class B> inline constexpr bool tg_vector_operands_v =
    is_tg_vproxy<remove_cvref_t<A>>::value || is_tg_vproxy<remove_cvref_t<B>>::value;

// operators on threadgroup elements and objects compute on their values (found by
// argument-dependent lookup: the proxies live in this namespace; a class's own templated
// operator, MLX's complex_t `operator*(complex_t<T>, complex_t<T>)`, deduces nothing from a proxy)
#define MSLEMU_PXOP(op)                                                                              \
  template <class A, class B, class = std::enable_if_t<tg_operands_v<A, B>>>                          \
  MSLEMU_AI auto operator op(const A& a, const B& b) -> decltype(val(a) op val(b)) { return val(a) op val(b); }
MSLEMU_PXOP(+) MSLEMU_PXOP(-) MSLEMU_PXOP(*) MSLEMU_PXOP(/) MSLEMU_PXOP(%) MSLEMU_PXOP(&) MSLEMU_PXOP(|)
MSLEMU_PXOP(^) MSLEMU_PXOP(<<) MSLEMU_PXOP(>>) MSLEMU_PXOP(==) MSLEMU_PXOP(!=) MSLEMU_PXOP(<) MSLEMU_PXOP(>)
MSLEMU_PXOP(<=) MSLEMU_PXOP(>=)
#undef MSLEMU_PXOP
// && and || only for vector elements: for scalars the built-in operators keep short-circuiting
#define MSLEMU_PXLOG(op)                                                                             \
  template <class A, class B, class = std::enable_if_t<tg_vector_operands_v<A, B>>>                   \
  MSLEMU_AI auto operator op(const A& a, const B& b) -> decltype(val(a) op val(b)) { return val(a) op val(b); }
MSLEMU_PXLOG(&&) MSLEMU_PXLOG(||)
#undef MSLEMU_PXLOG
template <class A, class = std::enable_if_t<is_tg_vproxy<A>::value>> MSLEMU_AI auto operator-(const A& a) { return -val(a); }
template <class A, class = std::enable_if_t<is_tg_vproxy<A>::value>> MSLEMU_AI auto operator+(const A& a) { return val(a); }
template <class A, class = std::enable_if_t<is_tg_vproxy<A>::value>> MSLEMU_AI auto operator~(const A& a) { return ~val(a); }
template <class A, class = std::enable_if_t<is_tg_vproxy<A>::value>> MSLEMU_AI auto operator!(const A& a) { return !val(a); }

// Members of threadgroup objects. C++ cannot overload `.`, so the rewriter turns
// `tile[i].field` (and `p->field`, `one.field`, for names declared threadgroup) into
// tg_member(tile[i], <lambda returning (o.field)>), and `tile[i].f(args)` into tg_call.
// Of an object of class type (a tg_obj_ref, or a tg_var's element) the member is a threadgroup element of its
// own (tg_ref, tg_vref, tg_obj_ref: its reads and writes go through the race check) and an
// array member a threadgroup pointer; anything else (a vector element's swizzle, an
// object that is not in threadgroup memory) gets the member as the code wrote it.
template <class X> struct is_tg_scalar_var : std::false_type {};
template <class T> struct is_tg_scalar_var<tg_var<T>> : std::true_type {};
template <class O, class F> MSLEMU_AI constexpr decltype(auto) tg_member(O&& o, F&& f) {
  if constexpr (is_tg_scalar_var<remove_cvref_t<O>>::value) {
    auto e = o.ref();  // its element: an object's proxy, or a vector's
    if constexpr (is_tg_obj_ref<decltype(e)>::value) return tg_member(e, std::forward<F>(f));
    else return remove_cvref_t<decltype(f(e))>(f(e));  // a copy of the member's proxy (it holds the address)
  } else if constexpr (is_tg_obj_ref<remove_cvref_t<O>>::value) {
    auto* obj = o.p;
    auto&& m = f(*obj);
    using M = std::remove_reference_t<decltype(m)>;
    static_assert(std::is_lvalue_reference_v<decltype(f(*obj))>,
                  "the Metal emulator: this member of a threadgroup object is not an object in it "
                  "(a bit-field, or a member function named without a call)");
    static_assert(std::rank_v<M> <= 1, "the Metal emulator does not support a multi-dimensional array member "
                                       "of a threadgroup object");
    char *lo = (char*)obj, *hi = (char*)(obj + 1);
    if (__builtin_expect((char*)&m < lo || (char*)&m >= hi, 0))
      fail(E_GENERIC, "a static data member read through a threadgroup object (at {{pc:%lx}}) is not supported "
           "by the Metal emulator: name it with its class (T::member)", (unsigned long)((uintptr_t)here() - ctx.pc_base));
    if constexpr (std::is_array_v<M>) return ptr<AS_THREADGROUP, std::remove_extent_t<M>>(&m[0], lo, hi, "");
    else return ptr<AS_THREADGROUP, M>(&m, lo, hi, "")[0];
  } else {
    return f(std::forward<O>(o));
  }
}
// compound assignments with a threadgroup object of class type (gemv's complex64
// `result[tm] += tgp_results[i]`: complex_t's templated `operator+=` deduces nothing from it)
#define MSLEMU_OBJCOP(op)                                                                              \
  template <class A, class B, class = std::enable_if_t<is_tg_obj_ref<remove_cvref_t<B>>::value &&      \
                                                       !is_proxy_v<A>>>                                \
  MSLEMU_AI auto operator op(A& a, const B& b) -> decltype(a op val(b)) { return a op val(b); }        \
  template <class A, class B, class = std::enable_if_t<is_tg_obj_ref<A>::value>, class = void>         \
  MSLEMU_AI auto operator op(const A& a, const B& b)                                                   \
      -> decltype(std::declval<val_t<A>&>() op val(b), a) { val_t<A> v = val(a); v op val(b); a = v; return a; }
MSLEMU_OBJCOP(+=) MSLEMU_OBJCOP(-=) MSLEMU_OBJCOP(*=) MSLEMU_OBJCOP(/=) MSLEMU_OBJCOP(%=) MSLEMU_OBJCOP(&=)
MSLEMU_OBJCOP(|=) MSLEMU_OBJCOP(^=) MSLEMU_OBJCOP(<<=) MSLEMU_OBJCOP(>>=)
#undef MSLEMU_OBJCOP

// a member function of a threadgroup object: a read of the whole object (what the function
// writes to it is not checked; docs/emulator.md)
template <class O, class F> MSLEMU_AI constexpr decltype(auto) tg_call(O&& o, F&& f) {
  if constexpr (is_tg_scalar_var<remove_cvref_t<O>>::value) {
    auto e = o.ref();
    return tg_call(e, std::forward<F>(f));
  } else if constexpr (is_tg_obj_ref<remove_cvref_t<O>>::value) {
    auto* obj = o.p;
    tg_read_n(obj, sizeof(*obj), here());
    return f(*obj);
  } else {
    return f(std::forward<O>(o));
  }
}

}  // namespace mslemu

// A library function defined by non-template overloads (for float, half, their vectors):
// one more overload that takes proxies and forwards their values.
#define MSLEMU_FORWARD_PROXIES(name)                                                                     \
  template <class A0, class... A, class = std::enable_if_t<::mslemu::any_proxy_v<A0, A...>>>             \
  MSLEMU_AI auto name(const A0& a0, const A&... a) -> decltype(name(::mslemu::val(a0), ::mslemu::val(a)...)) { \
    return name(::mslemu::val(a0), ::mslemu::val(a)...); }
