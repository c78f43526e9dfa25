// Macros the Metal standard library headers provide (stage-1 preprocessing only).
#ifndef MSLEMU_STAGE1_MACROS
#define MSLEMU_STAGE1_MACROS
#pragma mslemu_shim
#define METAL_FUNC inline __attribute__((always_inline))
#define __METAL_MAYBE_FAST_MATH__ 0
#define __METAL_FAST_MATH__ 1
#define __METAL_PRECISE_MATH__ 2
// a kernel's own trap is told apart from a failed bounds check, which traps the same way
// (build.py KERNEL_CHECK_FLAGS; runtime.cpp report_crash)
#define __builtin_trap() (::mslemu::user_trap = 1, __builtin_trap())
// The half-precision limits Metal's compiler predefines (clang's __FLT16_* for its 16-bit
// float), with half's IEEE binary16 values: the host's own are undefined first (clang++ 14
// on x86-64 has none, g++ writes them with an F16 suffix that its C++ does not accept). The
// floating ones are half literals (h), which the rewriter turns into half values.
#undef __FLT16_DENORM_MIN__
#undef __FLT16_HAS_DENORM__
#undef __FLT16_DIG__
#undef __FLT16_DECIMAL_DIG__
#undef __FLT16_EPSILON__
#undef __FLT16_HAS_INFINITY__
#undef __FLT16_HAS_QUIET_NAN__
#undef __FLT16_MANT_DIG__
#undef __FLT16_MAX_10_EXP__
#undef __FLT16_MAX_EXP__
#undef __FLT16_MAX__
#undef __FLT16_NORM_MAX__
#undef __FLT16_MIN_10_EXP__
#undef __FLT16_MIN_EXP__
#undef __FLT16_MIN__
#undef __FLT16_IS_IEC_60559__
#define __FLT16_DENORM_MIN__ 5.9604644775390625e-8h
#define __FLT16_HAS_DENORM__ 1
#define __FLT16_DIG__ 3
#define __FLT16_DECIMAL_DIG__ 5
#define __FLT16_EPSILON__ 9.765625e-4h
#define __FLT16_HAS_INFINITY__ 1
#define __FLT16_HAS_QUIET_NAN__ 1
#define __FLT16_MANT_DIG__ 11
#define __FLT16_MAX_10_EXP__ 4
#define __FLT16_MAX_EXP__ 16
#define __FLT16_MAX__ 6.5504e+4h
#define __FLT16_NORM_MAX__ 6.5504e+4h
#define __FLT16_MIN_10_EXP__ (-4)
#define __FLT16_MIN_EXP__ (-13)
#define __FLT16_MIN__ 6.103515625e-5h
#endif
