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
#endif
