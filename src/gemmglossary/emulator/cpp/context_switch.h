// Fiber context switch of the emulator runtime (original code), included by runtime.cpp.
//
// mslemu_switch(save, to) pushes the callee-saved registers on the current stack, stores the
// stack pointer in *save, switches to the stack `to` and pops the registers saved there.
// fiber_initial_sp() builds the stack of a fiber that has not run yet, so that the first
// switch to it "returns" into its entry function.
//
// It includes no system header, so a test can compile it for a Darwin target on Linux
// without Apple's SDK (tests/emulator/test_macos_code.py). ELF and Mach-O differ in the
// symbol name (Mach-O prefixes C names with '_') and in the directives: ELF has
// .type/.size/.hidden, Mach-O has none of them and spells "hidden" .private_extern.
#pragma once

#if defined(__APPLE__)
#define MSLEMU_SWITCH_SYM "_mslemu_switch"
#define MSLEMU_SWITCH_PROLOGUE ".private_extern " MSLEMU_SWITCH_SYM "\n"
#define MSLEMU_SWITCH_EPILOGUE ""
#else
#define MSLEMU_SWITCH_SYM "mslemu_switch"
#if defined(__x86_64__)
#define MSLEMU_SWITCH_PROLOGUE ".hidden " MSLEMU_SWITCH_SYM "\n.type " MSLEMU_SWITCH_SYM ",@function\n"
#else
#define MSLEMU_SWITCH_PROLOGUE ".hidden " MSLEMU_SWITCH_SYM "\n.type " MSLEMU_SWITCH_SYM ",%function\n"
#endif
#define MSLEMU_SWITCH_EPILOGUE ".size " MSLEMU_SWITCH_SYM ",.-" MSLEMU_SWITCH_SYM "\n"
#endif

#if defined(__x86_64__) || defined(__aarch64__)
extern "C" void mslemu_switch(void** save, void* to);
#endif

#if defined(__x86_64__)
// System V x86-64 (Linux and macOS): rbx, rbp, r12-r15 are callee-saved.
asm(".text\n.globl " MSLEMU_SWITCH_SYM "\n" MSLEMU_SWITCH_PROLOGUE ".p2align 4\n" MSLEMU_SWITCH_SYM ":\n"
    "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
    "  movq %rsp, (%rdi)\n  movq %rsi, %rsp\n"
    "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
    "  ret\n" MSLEMU_SWITCH_EPILOGUE);

namespace mslemu {
// `top` is 16-byte aligned; after the six pops and the `ret`, the entry function starts
// with (rsp + 8) 16-byte aligned, as a called function expects.
inline void** fiber_initial_sp(char* top, void (*entry)()) {
  void** sp = (void**)top;
  *--sp = nullptr;  // the entry function's return address: it never returns
  *--sp = (void*)entry;
  for (int k = 0; k < 6; ++k) *--sp = nullptr;
  return sp;
}
}  // namespace mslemu

#elif defined(__aarch64__)
// AAPCS64 (Linux and Apple): x19-x30 and d8-d15 are callee-saved; x18 (Apple's platform
// register) is left alone. The frame is 176 bytes, a multiple of 16 as sp must be.
asm(".text\n.globl " MSLEMU_SWITCH_SYM "\n" MSLEMU_SWITCH_PROLOGUE ".p2align 2\n" MSLEMU_SWITCH_SYM ":\n"
    "  sub sp, sp, #176\n"
    "  stp x19, x20, [sp, #0]\n  stp x21, x22, [sp, #16]\n  stp x23, x24, [sp, #32]\n"
    "  stp x25, x26, [sp, #48]\n  stp x27, x28, [sp, #64]\n  stp x29, x30, [sp, #80]\n"
    "  stp d8, d9, [sp, #96]\n  stp d10, d11, [sp, #112]\n  stp d12, d13, [sp, #128]\n  stp d14, d15, [sp, #144]\n"
    "  mov x9, sp\n  str x9, [x0]\n  mov sp, x1\n"
    "  ldp x19, x20, [sp, #0]\n  ldp x21, x22, [sp, #16]\n  ldp x23, x24, [sp, #32]\n"
    "  ldp x25, x26, [sp, #48]\n  ldp x27, x28, [sp, #64]\n  ldp x29, x30, [sp, #80]\n"
    "  ldp d8, d9, [sp, #96]\n  ldp d10, d11, [sp, #112]\n  ldp d12, d13, [sp, #128]\n  ldp d14, d15, [sp, #144]\n"
    "  add sp, sp, #176\n  ret\n" MSLEMU_SWITCH_EPILOGUE);

namespace mslemu {
// The first switch loads x30 (the link register) from slot 11 and `ret`s into the entry.
inline void** fiber_initial_sp(char* top, void (*entry)()) {
  void** sp = (void**)(top - 176);
  for (int k = 0; k < 176 / (int)sizeof(void*); ++k) sp[k] = nullptr;
  sp[11] = (void*)entry;
  return sp;
}
}  // namespace mslemu
#endif
