// __metal_* compiler builtins that MLX's headers call directly (original code). Each one is
// the library function of the same name; the trailing arguments (fast-math mode) change
// nothing here (see mslemu_math.h).
#pragma once

#define MSLEMU_B1(name, ...) \
  template <class T, class... M> MSLEMU_FN T __metal_##name(T x, M...) { return (T)::mslemu::math::name(x); }
#define MSLEMU_B2(name, ...) \
  template <class T, class U, class... M> MSLEMU_FN T __metal_##name(T x, U y, M...) { return (T)::mslemu::math::name(x, y); }
#define MSLEMU_B3(name, ...) \
  template <class T, class U, class V, class... M> MSLEMU_FN T __metal_##name(T x, U y, V z, M...) { \
    return (T)::mslemu::math::name(x, y, z); }
MSLEMU_MATH1_LIST(MSLEMU_B1)
MSLEMU_MATH2_LIST(MSLEMU_B2)
MSLEMU_MATH3_LIST(MSLEMU_B3)
#undef MSLEMU_B1
#undef MSLEMU_B2
#undef MSLEMU_B3
template <class T, class... M> MSLEMU_FN T __metal_ldexp(T x, int e, M...) { return (T)::mslemu::math::ldexp(x, e); }
template <class T, class... M> MSLEMU_FN T __metal_frexp(T x, int* e, M...) { return (T)::mslemu::math::frexp(x, *e); }
template <class T, class... M> MSLEMU_FN T __metal_frexp(T x, int& e, M...) { return (T)::mslemu::math::frexp(x, e); }

template <class T> MSLEMU_AI T __metal_get_simdgroup_size(T) { return (T)32; }
template <class T> MSLEMU_AI T __metal_get_thread_index_in_simdgroup(T) { return (T)mslemu::ctx.cur->lane; }
// the location is the line that called the builtin (in MLX, its bf16_math.h)
#define MSLEMU_LOC const char* file = __builtin_FILE(), int line = __builtin_LINE()
#define MSLEMU_BS1(name) \
  template <class A> inline auto __metal_simd_##name(const A& a, MSLEMU_LOC) { return metal::simd_##name(a, file, line); }
#define MSLEMU_BS2(name) \
  template <class A> inline auto __metal_simd_##name(const A& a, ushort k, MSLEMU_LOC) { return metal::simd_##name(a, k, file, line); }
MSLEMU_BS1(sum) MSLEMU_BS1(product) MSLEMU_BS1(max) MSLEMU_BS1(min)
MSLEMU_BS1(prefix_exclusive_sum) MSLEMU_BS1(prefix_inclusive_sum) MSLEMU_BS1(prefix_exclusive_product)
MSLEMU_BS1(prefix_inclusive_product) MSLEMU_BS1(broadcast_first) MSLEMU_BS1(all) MSLEMU_BS1(any) MSLEMU_BS1(ballot)
MSLEMU_BS2(shuffle) MSLEMU_BS2(shuffle_xor) MSLEMU_BS2(shuffle_up) MSLEMU_BS2(shuffle_down) MSLEMU_BS2(shuffle_rotate_down)
MSLEMU_BS2(shuffle_rotate_up) MSLEMU_BS2(broadcast)
template <class A, class B> inline auto __metal_simd_shuffle_and_fill_up(const A& a, const B& f, ushort d, ushort m, MSLEMU_LOC) {
  return metal::simd_shuffle_and_fill_up(a, f, d, m, file, line); }
template <class A, class B> inline auto __metal_simd_shuffle_and_fill_down(const A& a, const B& f, ushort d, ushort m, MSLEMU_LOC) {
  return metal::simd_shuffle_and_fill_down(a, f, d, m, file, line); }
// the bitwise reductions of a non-integer value (MLX's bf16_math.h defines simd_xor for
// bfloat through __metal_simd_xor of a float): what Apple's compiler makes of them is not
// documented, so running one is an error
#define MSLEMU_BSBITS(name)                                                                                     \
  template <class A> inline auto __metal_simd_##name(const A& a, MSLEMU_LOC) {                                \
    if constexpr (::mslemu::is_int_elem_v<::mslemu::val_t<A>>) return metal::simd_##name(a, file, line);        \
    else {                                                                                                     \
      ::mslemu::fail(::mslemu::E_GENERIC, "%s:%d: __metal_simd_" #name " of a floating-point value: the result of "  \
                     "this compiler builtin is not documented, so the emulator cannot reproduce it", file, line); \
      return ::mslemu::val(a);                                                                                 \
    } }
MSLEMU_BSBITS(and) MSLEMU_BSBITS(or) MSLEMU_BSBITS(xor)
#undef MSLEMU_BSBITS
#undef MSLEMU_BS1
#undef MSLEMU_BS2
#undef MSLEMU_LOC
