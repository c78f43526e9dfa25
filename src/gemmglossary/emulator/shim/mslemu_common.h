// <metal_common>, and abs/min/max/clamp/min3/max3/median3, which Metal defines for both
// integer and floating types (original code).
//
// For floating types min and max follow fmin and fmax (a NaN argument yields the other
// one); the functions of floats compute in float and round once to the argument type.
#pragma once

namespace mslemu {
namespace common {
template <class E> MSLEMU_AI E emax(E a, E b) {
  if constexpr (std::is_floating_point_v<E> || is_half<E>::value) return (E)__builtin_fmaxf((float)a, (float)b);
  else return a < b ? b : a;
}
template <class E> MSLEMU_AI E emin(E a, E b) {
  if constexpr (std::is_floating_point_v<E> || is_half<E>::value) return (E)__builtin_fminf((float)a, (float)b);
  else return b < a ? b : a;
}
template <class E> MSLEMU_AI E emedian(E a, E b, E c) { return emax(emin(a, b), emin(emax(a, b), c)); }

template <class... A> using mix_t = amix_t<val_t<A>...>;
template <class... A> inline constexpr bool arith_args_v = (is_arith_v<typename comp<val_t<A>>::type> && ...) &&
                                                           same_lengths_v<val_t<A>...>;
template <class... A> inline constexpr bool float_args_v = (is_float_elem_v<val_t<A>> && ...) && same_lengths_v<val_t<A>...>;

template <class A, class R = val_t<A>, class = std::enable_if_t<arith_args_v<A>>> MSLEMU_FN R abs(const A& a) {
  using E = typename comp<R>::type;
  return emap<R>([](E x) -> E {
    if constexpr (std::is_floating_point_v<E> || is_half<E>::value) return (E)__builtin_fabsf((float)x);
    else if constexpr (std::is_signed_v<E>) return x < 0 ? (E)-x : x;
    else return x;
  }, val(a));
}
template <class A, class B, class R = mix_t<A, B>, class = std::enable_if_t<arith_args_v<A, B>>>
MSLEMU_FN R max(const A& a, const B& b) {
  using E = typename comp<R>::type;
  return emap<R>([](E x, E y) -> E { return emax(x, y); }, val(a), val(b));
}
template <class A, class B, class R = mix_t<A, B>, class = std::enable_if_t<arith_args_v<A, B>>>
MSLEMU_FN R min(const A& a, const B& b) {
  using E = typename comp<R>::type;
  return emap<R>([](E x, E y) -> E { return emin(x, y); }, val(a), val(b));
}
// clamp(x, lo, hi): min(max(x, lo), hi); the bounds may be scalars for a vector x
template <class A, class B, class C, class R = val_t<A>, class = std::enable_if_t<arith_args_v<A, B, C>>>
MSLEMU_FN R clamp(const A& x, const B& lo, const C& hi) {
  using E = typename comp<R>::type;
  return emap<R>([](E v, E l, E h) -> E { return emin(emax(v, l), h); }, val(x), val(lo), val(hi));
}
template <class A, class B, class C, class R = mix_t<A, B, C>, class = std::enable_if_t<arith_args_v<A, B, C>>>
MSLEMU_FN R max3(const A& a, const B& b, const C& c) {
  using E = typename comp<R>::type;
  return emap<R>([](E x, E y, E z) -> E { return emax(emax(x, y), z); }, val(a), val(b), val(c));
}
template <class A, class B, class C, class R = mix_t<A, B, C>, class = std::enable_if_t<arith_args_v<A, B, C>>>
MSLEMU_FN R min3(const A& a, const B& b, const C& c) {
  using E = typename comp<R>::type;
  return emap<R>([](E x, E y, E z) -> E { return emin(emin(x, y), z); }, val(a), val(b), val(c));
}
template <class A, class B, class C, class R = mix_t<A, B, C>, class = std::enable_if_t<arith_args_v<A, B, C>>>
MSLEMU_FN R median3(const A& a, const B& b, const C& c) {
  using E = typename comp<R>::type;
  return emap<R>([](E x, E y, E z) -> E { return emedian(x, y, z); }, val(a), val(b), val(c));
}

// floating-point only
template <class A, class R = val_t<A>, class = std::enable_if_t<float_args_v<A>>> MSLEMU_FN R saturate(const A& x) {
  return fmap<R>([](float v) -> float { return __builtin_fminf(__builtin_fmaxf(v, 0.0f), 1.0f); }, val(x));
}
// sign: 1 for x > 0, -1 for x < 0, x itself for +0 and -0, 0 for a NaN
template <class A, class R = val_t<A>, class = std::enable_if_t<float_args_v<A>>> MSLEMU_FN R sign(const A& x) {
  return fmap<R>([](float v) -> float { return v > 0.0f ? 1.0f : v < 0.0f ? -1.0f : v == 0.0f ? v : 0.0f; }, val(x));
}
template <class A, class B, class C, class R = mix_t<A, B, C>, class = std::enable_if_t<float_args_v<A, B, C>>>
MSLEMU_FN R mix(const A& x, const B& y, const C& a) {
  return fmap<R>([](float u, float v, float t) -> float { return u + (v - u) * t; }, val(x), val(y), val(a));
}
template <class A, class B, class R = mix_t<A, B>, class = std::enable_if_t<float_args_v<A, B>>>
MSLEMU_FN R step(const A& edge, const B& x) {
  return fmap<R>([](float e, float v) -> float { return v < e ? 0.0f : 1.0f; }, val(edge), val(x));
}
template <class A, class B, class C, class R = mix_t<A, B, C>, class = std::enable_if_t<float_args_v<A, B, C>>>
MSLEMU_FN R smoothstep(const A& edge0, const B& edge1, const C& x) {
  return fmap<R>([](float e0, float e1, float v) -> float {
    float t = __builtin_fminf(__builtin_fmaxf((v - e0) / (e1 - e0), 0.0f), 1.0f);
    return t * t * (3.0f - 2.0f * t);
  }, val(edge0), val(edge1), val(x));
}
}  // namespace common
}  // namespace mslemu

#define MSLEMU_COMMON_LIST(X) X(abs) X(max) X(min) X(clamp) X(max3) X(min3) X(median3) X(saturate) X(sign) \
  X(mix) X(step) X(smoothstep)
#define MSLEMU_USING_COMMON(name) using ::mslemu::common::name;
namespace metal {
MSLEMU_COMMON_LIST(MSLEMU_USING_COMMON)
namespace fast { MSLEMU_COMMON_LIST(MSLEMU_USING_COMMON) }
namespace precise { MSLEMU_COMMON_LIST(MSLEMU_USING_COMMON) }
}  // namespace metal
#undef MSLEMU_USING_COMMON
