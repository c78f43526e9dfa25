// __metal_* compiler builtins that MLX's headers call directly (original code).
#pragma once

#define MSLEMU_B1(name, expr) template <class T, class... M> MSLEMU_AI T __metal_##name(T x, M...) { float f = (float)x; return (T)(expr); }
MSLEMU_B1(acos, __builtin_acosf(f)) MSLEMU_B1(acosh, __builtin_acoshf(f)) MSLEMU_B1(asin, __builtin_asinf(f))
MSLEMU_B1(asinh, __builtin_asinhf(f)) MSLEMU_B1(atan, __builtin_atanf(f)) MSLEMU_B1(atanh, __builtin_atanhf(f))
MSLEMU_B1(ceil, __builtin_ceilf(f)) MSLEMU_B1(cos, __builtin_cosf(f)) MSLEMU_B1(cosh, __builtin_coshf(f))
MSLEMU_B1(cospi, __builtin_cosf(f * 3.14159265358979f)) MSLEMU_B1(exp, __builtin_expf(f)) MSLEMU_B1(exp2, __builtin_exp2f(f))
MSLEMU_B1(exp10, __builtin_powf(10.0f, f)) MSLEMU_B1(fabs, __builtin_fabsf(f)) MSLEMU_B1(floor, __builtin_floorf(f))
MSLEMU_B1(fract, f - __builtin_floorf(f)) MSLEMU_B1(log, __builtin_logf(f)) MSLEMU_B1(log10, __builtin_log10f(f))
MSLEMU_B1(log2, __builtin_log2f(f)) MSLEMU_B1(rint, __builtin_rintf(f)) MSLEMU_B1(round, __builtin_roundf(f))
MSLEMU_B1(rsqrt, 1.0f / __builtin_sqrtf(f)) MSLEMU_B1(sin, __builtin_sinf(f)) MSLEMU_B1(sinh, __builtin_sinhf(f))
MSLEMU_B1(sinpi, __builtin_sinf(f * 3.14159265358979f)) MSLEMU_B1(sqrt, __builtin_sqrtf(f)) MSLEMU_B1(tan, __builtin_tanf(f))
MSLEMU_B1(tanh, __builtin_tanhf(f)) MSLEMU_B1(tanpi, __builtin_tanf(f * 3.14159265358979f)) MSLEMU_B1(trunc, __builtin_truncf(f))
#undef MSLEMU_B1
#define MSLEMU_B2(name, expr) template <class T, class U, class... M> MSLEMU_AI T __metal_##name(T x, U y, M...) { float a = (float)x, b = (float)y; return (T)(expr); }
MSLEMU_B2(atan2, __builtin_atan2f(a, b)) MSLEMU_B2(divide, a / b) MSLEMU_B2(fmax, __builtin_fmaxf(a, b))
MSLEMU_B2(fmin, __builtin_fminf(a, b)) MSLEMU_B2(fmod, __builtin_fmodf(a, b)) MSLEMU_B2(nextafter, __builtin_nextafterf(a, b))
MSLEMU_B2(pow, __builtin_powf(a, b)) MSLEMU_B2(powr, __builtin_powf(a, b))
#undef MSLEMU_B2
template <class T, class... M> MSLEMU_AI T __metal_ldexp(T x, int e, M...) { return (T)__builtin_ldexpf((float)x, e); }
template <class T, class... M> MSLEMU_AI T __metal_frexp(T x, int* e, M...) { return (T)__builtin_frexpf((float)x, e); }
template <class T, class... M> MSLEMU_AI T __metal_frexp(T x, int& e, M...) { return (T)__builtin_frexpf((float)x, &e); }
template <class T, class... M> MSLEMU_AI T __metal_fma(T x, T y, T z, M...) { return (T)__builtin_fmaf((float)x, (float)y, (float)z); }
template <class T, class... M> MSLEMU_AI T __metal_fmax3(T x, T y, T z, M...) { return (T)__builtin_fmaxf(__builtin_fmaxf((float)x, (float)y), (float)z); }
template <class T, class... M> MSLEMU_AI T __metal_fmin3(T x, T y, T z, M...) { return (T)__builtin_fminf(__builtin_fminf((float)x, (float)y), (float)z); }
template <class T, class... M> MSLEMU_AI T __metal_fmedian3(T x, T y, T z, M...) {
  float a = (float)x, b = (float)y, c = (float)z;
  return (T)__builtin_fmaxf(__builtin_fminf(a, b), __builtin_fminf(__builtin_fmaxf(a, b), c)); }

template <class T> MSLEMU_AI T __metal_get_simdgroup_size(T) { return (T)32; }
#define MSLEMU_BS1(name, fn) template <class T> inline T __metal_##name(T x, const char* file = __builtin_FILE(), int line = __builtin_LINE()) { return metal::fn(x, file, line); }
#define MSLEMU_BS2(name, fn) template <class T> inline T __metal_##name(T x, ushort a, const char* file = __builtin_FILE(), int line = __builtin_LINE()) { return metal::fn(x, a, file, line); }
MSLEMU_BS1(simd_sum, simd_sum) MSLEMU_BS1(simd_product, simd_product) MSLEMU_BS1(simd_max, simd_max)
MSLEMU_BS1(simd_min, simd_min) MSLEMU_BS1(simd_xor, simd_xor) MSLEMU_BS1(simd_prefix_exclusive_sum, simd_prefix_exclusive_sum)
MSLEMU_BS1(simd_prefix_inclusive_sum, simd_prefix_inclusive_sum)
MSLEMU_BS2(simd_broadcast, simd_broadcast) MSLEMU_BS2(simd_shuffle, simd_shuffle) MSLEMU_BS2(simd_shuffle_xor, simd_shuffle_xor)
MSLEMU_BS2(simd_shuffle_up, simd_shuffle_up) MSLEMU_BS2(simd_shuffle_down, simd_shuffle_down)
MSLEMU_BS2(simd_shuffle_rotate_up, simd_shuffle_rotate_up) MSLEMU_BS2(simd_shuffle_rotate_down, simd_shuffle_rotate_down)
#undef MSLEMU_BS1
#undef MSLEMU_BS2
template <class T> inline T __metal_simd_prefix_exclusive_product(T x) { return metal::simd_op_<T>(metal::OP_PREFIX_EXCL_SUM, x, 0, __builtin_FILE(), __builtin_LINE()) * T(0) + T(1); }
template <class T> inline T __metal_simd_prefix_inclusive_product(T x) { return x; }
template <class T> inline T __metal_simd_shuffle_and_fill_up(T x, T fill, ushort delta, ushort modulo = 32) {
  T up = metal::simd_shuffle_up(x, delta);
  return (mslemu::ctx.cur->lane % modulo) < delta ? fill : up; }
template <class T> inline T __metal_simd_shuffle_and_fill_down(T x, T fill, ushort delta, ushort modulo = 32) {
  T dn = metal::simd_shuffle_down(x, delta);
  return (mslemu::ctx.cur->lane % modulo) + delta >= modulo ? fill : dn; }
