// <metal_math> (original code).
//
// Every function is one template in mslemu::math, declared into metal, metal::fast and
// metal::precise with using-declarations. A header that adds overloads to one of those
// namespaces (MLX's bf16_math.h adds bfloat ones to all three) then adds to an overload set
// that still holds ours, so `metal::fast::exp(1.0f)` keeps meaning the float function.
//
// Argument types follow Metal: half and its vectors compute in half precision (in float,
// rounded once); float, and scalars that convert to float (bfloat, integers), compute in
// float. The results are correctly rounded or within an ulp of it, which satisfies both
// the precise and the fast-math accuracy bounds of the specification, so fast:: and
// precise:: share one implementation.
#pragma once

namespace mslemu {

// the floating type a math function computes in and returns for an argument of type V
template <class V, class = void> struct fres {};
template <> struct fres<float> { using type = float; };
template <> struct fres<double> { using type = float; };  // Metal has no double
template <> struct fres<half> { using type = half; };
template <class V> struct fres<V, std::enable_if_t<std::is_integral_v<V> || std::is_same_v<V, bfloat>>> { using type = float; };
template <int N> struct fres<metal::vec<float, N>> { using type = metal::vec<float, N>; };
template <int N> struct fres<metal::vec<half, N>> { using type = metal::vec<half, N>; };
template <class V> using fres_t = typename fres<V>::type;

template <class R> struct comp { using type = R; static constexpr int n = 1; };
template <class T, int N> struct comp<metal::vec<T, N>> { using type = T; static constexpr int n = N; };

// component i of a scalar or vector (a scalar repeats for every component)
template <class V> MSLEMU_AI float fcomp(const V& v, int i) {
  if constexpr (comp<V>::n == 1) return (float)v; else return (float)v[i];
}
template <class R> MSLEMU_AI void fput(R& r, int i, float f) {
  if constexpr (comp<R>::n == 1) r = (R)f; else r[i] = (typename comp<R>::type)f;
}
// apply f componentwise
template <class R, class F, class... V> MSLEMU_AI R fmap(F f, const V&... v) {
  R r;
  for (int i = 0; i < comp<R>::n; ++i) fput(r, i, f(fcomp(v, i)...));
  return r;
}
template <class... I> constexpr int max_of(I... n) { int m = 0; ((m = n > m ? n : m), ...); return m; }

// the same in the arguments' own element type (integer and type-preserving functions)
template <class V> MSLEMU_AI typename comp<V>::type ecomp(const V& v, int i) {
  if constexpr (comp<V>::n == 1) return v; else return v[i];
}
template <class R, class F, class... V> MSLEMU_AI R emap(F f, const V&... v) {
  R r;
  for (int i = 0; i < comp<R>::n; ++i) {
    if constexpr (comp<R>::n == 1) r = (R)f(ecomp(v, i)...);
    else r[i] = (typename comp<R>::type)f(ecomp(v, i)...);
  }
  return r;
}
// the result of combining values of types V...: a vector if any is one, of the element type
// they share (or, mixing scalar types, of their usual arithmetic conversion)
template <class E, class... F> struct elem_common { using type = E; };
template <class E, class F, class... G> struct elem_common<E, F, G...> {
  using type = typename elem_common<std::conditional_t<std::is_same_v<E, F>, E,
                                                       decltype(std::declval<E>() + std::declval<F>())>, G...>::type;
};
template <class... V> using amix_t = std::conditional_t<
    max_of(comp<V>::n...) == 1, typename elem_common<typename comp<V>::type...>::type,
    metal::vec<typename elem_common<typename comp<V>::type...>::type, max_of(comp<V>::n...)>>;
template <class... V> inline constexpr bool same_lengths_v = ((comp<V>::n == 1 || comp<V>::n == max_of(comp<V>::n...)) && ...);
template <class V> inline constexpr bool is_float_elem_v =
    std::is_floating_point_v<typename comp<V>::type> || is_half<typename comp<V>::type>::value;
template <class V> inline constexpr bool is_int_elem_v =
    std::is_integral_v<typename comp<V>::type> && !std::is_same_v<typename comp<V>::type, bool>;

namespace fimpl {
MSLEMU_FN double pi_times(double r) { return r * 3.14159265358979323846; }
// sin(pi x), cos(pi x), tan(pi x): exact argument reduction, then the double functions
MSLEMU_FN float sinpi(float x) {
  if (__builtin_isinf(x) || __builtin_isnan(x)) return __builtin_nanf("");
  float r = __builtin_fmodf(x, 2.0f);  // exact
  if (r == __builtin_truncf(r)) return __builtin_copysignf(0.0f, x);
  return (float)__builtin_sin(pi_times(r));
}
MSLEMU_FN float cospi(float x) {
  if (__builtin_isinf(x) || __builtin_isnan(x)) return __builtin_nanf("");
  float r = __builtin_fabsf(__builtin_fmodf(x, 2.0f));
  if (r == 0.5f || r == 1.5f) return 0.0f;
  return (float)__builtin_cos(pi_times(r));
}
MSLEMU_FN float tanpi(float x) {
  if (__builtin_isinf(x) || __builtin_isnan(x)) return __builtin_nanf("");
  float r = __builtin_fmodf(x, 1.0f);
  if (r == 0.0f) return __builtin_copysignf(0.0f, x);
  if (__builtin_fabsf(r) == 0.5f) return __builtin_copysignf(__builtin_inff(), r);
  return (float)__builtin_tan(pi_times(r));
}
MSLEMU_FN float powr(float x, float y) { return x < 0.0f ? __builtin_nanf("") : __builtin_powf(x, y); }
MSLEMU_FN float rsqrt(float x) { return (float)(1.0 / __builtin_sqrt((double)x)); }
MSLEMU_FN float fdim(float x, float y) {
  if (__builtin_isnan(x) || __builtin_isnan(y)) return __builtin_nanf("");
  return x > y ? x - y : 0.0f;
}
MSLEMU_FN float fmedian3(float a, float b, float c) {
  return __builtin_fmaxf(__builtin_fminf(a, b), __builtin_fminf(__builtin_fmaxf(a, b), c));
}
MSLEMU_FN float exp10(float x) { return (float)__builtin_pow(10.0, (double)x); }
// nextafter steps one ulp of the argument type (for half, a half ulp: the float result
// rounded back to half would be x itself)
template <class E> MSLEMU_FN float nextafter_as(float x, float y) {
  if constexpr (std::is_same_v<E, half>) {
    if (__builtin_isnan(x) || __builtin_isnan(y)) return __builtin_nanf("");
    if (x == y) return y;
    uint16_t h = f32_to_f16_bits(x);
    if ((h & 0x7fff) == 0) h = (uint16_t)((__builtin_signbit(y) ? 0x8000 : 0) | 1);  // the smallest subnormal
    else if ((x < y) == !(h & 0x8000)) ++h;  // away from zero
    else --h;
    return f16_bits_to_f32(h);
  } else {
    return __builtin_nextafterf(x, y);
  }
}
// fract is below 1 in the result type: 1 - ulp of half for half
template <class E> MSLEMU_FN float fract_as(float x) {
  constexpr float below_one = std::is_same_v<E, half> ? 0x1.ffcp-1f : 0x1.fffffep-1f;
  if (__builtin_isinf(x)) return __builtin_copysignf(0.0f, x);
  return __builtin_fminf(x - __builtin_floorf(x), below_one);
}
// fma rounded once to half (in float, the product of two halves is exact but the sum is not)
template <class E> MSLEMU_FN float fma_as(float x, float y, float z) {
  if constexpr (std::is_same_v<E, half>) return (float)__builtin_fma((double)x, (double)y, (double)z);
  else return __builtin_fmaf(x, y, z);
}
}  // namespace fimpl

// one-argument functions: name and the float expression of x
#define MSLEMU_MATH1_LIST(X)                                                                          \
  X(acos, __builtin_acosf(x)) X(acosh, __builtin_acoshf(x)) X(asin, __builtin_asinf(x))               \
  X(asinh, __builtin_asinhf(x)) X(atan, __builtin_atanf(x)) X(atanh, __builtin_atanhf(x))             \
  X(ceil, __builtin_ceilf(x)) X(cos, __builtin_cosf(x)) X(cosh, __builtin_coshf(x))                   \
  X(cospi, fimpl::cospi(x)) X(exp, __builtin_expf(x)) X(exp2, __builtin_exp2f(x))                     \
  X(exp10, fimpl::exp10(x)) X(fabs, __builtin_fabsf(x)) X(floor, __builtin_floorf(x))                 \
  X(fract, fimpl::fract_as<typename comp<R>::type>(x)) X(log, __builtin_logf(x)) X(log2, __builtin_log2f(x))                     \
  X(log10, __builtin_log10f(x)) X(rint, __builtin_rintf(x)) X(round, __builtin_roundf(x))             \
  X(rsqrt, fimpl::rsqrt(x)) X(sin, __builtin_sinf(x)) X(sinh, __builtin_sinhf(x))                     \
  X(sinpi, fimpl::sinpi(x)) X(sqrt, __builtin_sqrtf(x)) X(tan, __builtin_tanf(x))                     \
  X(tanh, __builtin_tanhf(x)) X(tanpi, fimpl::tanpi(x)) X(trunc, __builtin_truncf(x))
// two-argument functions of x and y
#define MSLEMU_MATH2_LIST(X)                                                                          \
  X(atan2, __builtin_atan2f(x, y)) X(copysign, __builtin_copysignf(x, y)) X(divide, x / y)            \
  X(fdim, fimpl::fdim(x, y)) X(fmax, __builtin_fmaxf(x, y)) X(fmin, __builtin_fminf(x, y))            \
  X(fmod, __builtin_fmodf(x, y)) X(nextafter, fimpl::nextafter_as<typename comp<R>::type>(x, y)) X(pow, __builtin_powf(x, y)) \
  X(powr, fimpl::powr(x, y))
// three-argument functions of x, y and z
#define MSLEMU_MATH3_LIST(X)                                                                          \
  X(fma, fimpl::fma_as<typename comp<R>::type>(x, y, z)) X(fmax3, __builtin_fmaxf(__builtin_fmaxf(x, y), z))                \
  X(fmin3, __builtin_fminf(__builtin_fminf(x, y), z)) X(fmedian3, fimpl::fmedian3(x, y, z))

namespace math {
template <class A, class B> using fres2_t = std::conditional_t<(comp<fres_t<val_t<A>>>::n >= comp<fres_t<val_t<B>>>::n),
                                                                fres_t<val_t<A>>, fres_t<val_t<B>>>;
template <class A, class B, class C> using fres3_t = fres2_t<fres2_t<A, B>, fres2_t<B, C>>;
// vector and scalar arguments of one call must agree in length (a scalar repeats)
template <class... V> inline constexpr bool lengths_agree_v =
    ((comp<fres_t<val_t<V>>>::n == 1 || comp<fres_t<val_t<V>>>::n == max_of(comp<fres_t<val_t<V>>>::n...)) && ...);

#define MSLEMU_DEF1(name, expr)                                                                       \
  template <class A, class R = fres_t<val_t<A>>>                                                      \
  MSLEMU_FN R name(const A& a) { return fmap<R>([](float x) -> float { return expr; }, val(a)); }
#define MSLEMU_DEF2(name, expr)                                                                       \
  template <class A, class B, class R = fres2_t<A, B>, class = std::enable_if_t<lengths_agree_v<A, B>>> \
  MSLEMU_FN R name(const A& a, const B& b) {                                                          \
    return fmap<R>([](float x, float y) -> float { return expr; }, val(a), val(b)); }
#define MSLEMU_DEF3(name, expr)                                                                       \
  template <class A, class B, class C, class R = fres3_t<A, B, C>,                                    \
            class = std::enable_if_t<lengths_agree_v<A, B, C>>>                                       \
  MSLEMU_FN R name(const A& a, const B& b, const C& c) {                                              \
    return fmap<R>([](float x, float y, float z) -> float { return expr; }, val(a), val(b), val(c)); }
MSLEMU_MATH1_LIST(MSLEMU_DEF1)
MSLEMU_MATH2_LIST(MSLEMU_DEF2)
MSLEMU_MATH3_LIST(MSLEMU_DEF3)
#undef MSLEMU_DEF1
#undef MSLEMU_DEF2
#undef MSLEMU_DEF3

// functions with an integer or output argument
template <class A, class R = fres_t<val_t<A>>> MSLEMU_FN R ldexp(const A& x, int k) {
  return fmap<R>([k](float v) -> float { return __builtin_ldexpf(v, k); }, val(x));
}
template <class A, class T, int N, class R = fres_t<val_t<A>>, class = std::enable_if_t<comp<R>::n == N>>
MSLEMU_FN R ldexp(const A& x, const metal::vec<T, N>& k) {
  R r; R v = val(x);
  for (int i = 0; i < N; ++i) r[i] = (typename comp<R>::type)__builtin_ldexpf((float)v[i], (int)k[i]);
  return r;
}
template <class A, class E, class R = fres_t<val_t<A>>> MSLEMU_FN R frexp(const A& x, E&& e) {
  R v = val(x), r;
  if constexpr (comp<R>::n == 1) { int k; r = (R)__builtin_frexpf((float)v, &k); e = k; }
  else for (int i = 0; i < comp<R>::n; ++i) { int k; r[i] = (typename comp<R>::type)__builtin_frexpf((float)v[i], &k); e[i] = k; }
  return r;
}
template <class A, class R = fres_t<val_t<A>>> MSLEMU_FN auto ilogb(const A& x) {
  R v = val(x);
  if constexpr (comp<R>::n == 1) return (int)__builtin_ilogbf((float)v);
  else { metal::vec<int, comp<R>::n> r; for (int i = 0; i < comp<R>::n; ++i) r[i] = __builtin_ilogbf((float)v[i]); return r; }
}
template <class A, class I, class R = fres_t<val_t<A>>> MSLEMU_FN R modf(const A& x, I&& ipart) {
  R v = val(x), r, ip;
  for (int i = 0; i < comp<R>::n; ++i) {
    float f = fcomp(v, i), t = __builtin_truncf(f);
    fput(ip, i, t);
    fput(r, i, __builtin_isinf(f) ? __builtin_copysignf(0.0f, f) : f - t);
  }
  ipart = ip;
  return r;
}
template <class A, class C, class R = fres_t<val_t<A>>> MSLEMU_FN R sincos(const A& x, C&& cosval) {
  R v = val(x), s, c;
  for (int i = 0; i < comp<R>::n; ++i) {
    float f = fcomp(v, i);
    fput(s, i, __builtin_sinf(f));
    fput(c, i, __builtin_cosf(f));
  }
  cosval = c;
  return s;
}
}  // namespace math
}  // namespace mslemu

#define MSLEMU_MATH_OTHER_LIST(X) X(ldexp) X(frexp) X(ilogb) X(modf) X(sincos)
#define MSLEMU_USING_EXPR(name, ...) using ::mslemu::math::name;
#define MSLEMU_USING(name) using ::mslemu::math::name;
#define MSLEMU_MATH_USINGS                                                                            \
  MSLEMU_MATH1_LIST(MSLEMU_USING_EXPR) MSLEMU_MATH2_LIST(MSLEMU_USING_EXPR)                           \
  MSLEMU_MATH3_LIST(MSLEMU_USING_EXPR) MSLEMU_MATH_OTHER_LIST(MSLEMU_USING)
namespace metal {
MSLEMU_MATH_USINGS
namespace fast { MSLEMU_MATH_USINGS }
namespace precise { MSLEMU_MATH_USINGS }
}  // namespace metal

// <metal_math> constants
#define MAXFLOAT 0x1.fffffep+127f
#define HUGE_VALF __builtin_huge_valf()
#define HUGE_VALH ((half)__builtin_huge_valf())
#define MAXHALF ((half)0x1.ffcp15f)  // the largest finite half (Metal's math constants; llama.cpp's flash attention)
#define INFINITY __builtin_inff()
#define NAN __builtin_nanf("")
#define M_E_F 2.71828182845904523536f
#define M_LOG2E_F 1.44269504088896340736f
#define M_LOG10E_F 0.434294481903251827651f
#define M_LN2_F 0.693147180559945309417f
#define M_LN10_F 2.30258509299404568402f
#define M_PI_F 3.14159265358979323846f
#define M_PI_2_F 1.57079632679489661923f
#define M_PI_4_F 0.785398163397448309616f
#define M_1_PI_F 0.318309886183790671538f
#define M_2_PI_F 0.636619772367581343076f
#define M_2_SQRTPI_F 1.12837916709551257390f
#define M_SQRT2_F 1.41421356237309504880f
#define M_SQRT1_2_F 0.707106781186547524401f
#define M_E_H ((half)M_E_F)
#define M_LOG2E_H ((half)M_LOG2E_F)
#define M_LOG10E_H ((half)M_LOG10E_F)
#define M_LN2_H ((half)M_LN2_F)
#define M_LN10_H ((half)M_LN10_F)
#define M_PI_H ((half)M_PI_F)
#define M_PI_2_H ((half)M_PI_2_F)
#define M_PI_4_H ((half)M_PI_4_F)
#define M_1_PI_H ((half)M_1_PI_F)
#define M_2_PI_H ((half)M_2_PI_F)
#define M_2_SQRTPI_H ((half)M_2_SQRTPI_F)
#define M_SQRT2_H ((half)M_SQRT2_F)
#define M_SQRT1_2_H ((half)M_SQRT1_2_F)
