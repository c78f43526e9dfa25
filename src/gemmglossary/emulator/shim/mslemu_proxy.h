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

template <class A, class B> inline constexpr bool tg_operands_v =
    is_tg_proxy<remove_cvref_t<A>>::value || is_tg_proxy<remove_cvref_t<B>>::value;
template <class A, class B> inline constexpr bool tg_vector_operands_v =
    is_tg_vproxy<remove_cvref_t<A>>::value || is_tg_vproxy<remove_cvref_t<B>>::value;

// operators on threadgroup elements compute on their values (found by argument-dependent
// lookup: the proxies live in this namespace)
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

}  // namespace mslemu

// A library function defined by non-template overloads (for float, half, their vectors):
// one more overload that takes proxies and forwards their values.
#define MSLEMU_FORWARD_PROXIES(name)                                                                     \
  template <class A0, class... A, class = std::enable_if_t<::mslemu::any_proxy_v<A0, A...>>>             \
  MSLEMU_AI auto name(const A0& a0, const A&... a) -> decltype(name(::mslemu::val(a0), ::mslemu::val(a)...)) { \
    return name(::mslemu::val(a0), ::mslemu::val(a)...); }
