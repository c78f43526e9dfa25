// mslemu runtime interface shared by the kernel translation unit and the runtime.
// Part of the gemmglossary Metal emulator (original code).
#pragma once
#include <cstdint>
#include <cstddef>
#include <type_traits>
#include "mslemu_abi.h"

namespace mslemu {

enum FiberState : int { F_READY = 0, F_BARRIER = 1, F_SIMD = 2, F_DONE = 3 };

struct Fiber {
  void* sp;
  int state;
  uint32_t tid;      // thread_index_in_threadgroup
  uint32_t lane;     // thread_index_in_simdgroup
  uint32_t sg;       // simdgroup_index_in_threadgroup
  uint32_t pos[3];   // thread_position_in_threadgroup
  // waiting site
  const char* wfile;
  int wline;
  int wop;
  // collective slot
  const void* cin;
  void* cout;
  int64_t carg;
  const void* cextra;
  int nq;  // simdgroup-matrix multiplies queued by this lane, not yet computed
  uint64_t qhash;  // hash of the queued multiplies' sites and operand sources
};

// One queued simdgroup_multiply(_accumulate) of one lane. Multiplies are deferred: a lane
// stages its operands and runs on; the simdgroup meets once ("flush") when some lane needs
// a result, and the last lane to arrive computes every queued product in order.
enum { MMA_QCAP = 32 };
struct LaneOp {
  float in[6];          // a0 a1 b0 b1 c0 c1 (when not produced by an earlier queued op)
  int8_t dep[3];        // for a, b, c: index of the queued op that produces it, or -1
  uint8_t td;           // element type of the result: 0 float, 1 half, 2 bfloat
  int line;
  const char* file;
  void* reg_e;          // where the result goes (the matrix's two elements), or null
  int32_t* reg_pend;    // the matrix's pending marker, reset when the result is written
};

typedef void (*CombineFn)(int op, Fiber** lanes, int nlanes);

struct Ctx {
  // grid
  uint32_t tg_pos[3], tptg[3], tgs_per_grid[3], threads_per_grid[3], grid_origin[3];
  uint32_t nthreads, nsg, max_tptg[3];
  Fiber* cur;
  // race detection
  char* arena;           // threadgroup memory arena
  uint64_t arena_size;
  uint64_t arena_used;
  uint64_t tg_gen;       // increments per threadgroup
  void* shadow;
  uint32_t clock;
  uint32_t tg_sync;
  uint32_t sg_sync[32];
  int race_check;
  // bindings
  void* buf[MSLEMU_MAX_BUFFERS];
  uint64_t buf_size[MSLEMU_MAX_BUFFERS];
  const char* buf_name[MSLEMU_MAX_BUFFERS];
  void* tgm[MSLEMU_MAX_BUFFERS];
  uint64_t tgm_size[MSLEMU_MAX_BUFFERS];
  int oob_lenient;
  LaneOp* mmaq;  // [simdgroup][op][lane]
  uintptr_t pc_base;
  uint32_t tg_start;  // clock value when the current threadgroup started
  uint32_t exec_sync; // clock value of the last threadgroup barrier of any kind (tg_sync: with mem_threadgroup)
};



extern Ctx ctx;  // the launch and threadgroup being run, as kernel code sees them (defined in runtime.cpp)
extern volatile int user_trap;  // set by a kernel's __builtin_trap() just before it traps (_mslemu_macros.h)

void mma_flush(const char* file, int line);
inline LaneOp& qop(uint32_t sg, int op, uint32_t lane) { return ctx.mmaq[((size_t)sg * MMA_QCAP + op) * 32 + lane]; }

// runtime services (implemented in runtime.cpp)
[[noreturn]] void fail(int kind, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void barrier(int flags, const char* file, int line);
void simd_barrier(int flags, const char* file, int line);  // flags: the mem_flags
void collective(int op, const char* file, int line, CombineFn fn);
void* tg_alloc(uint64_t bytes, uint64_t align, const char* name, uint32_t esize = 0, uint32_t nd = 0,
               const uint32_t* dims = nullptr);
void* oob(const void* pc, const void* p, const void* lo, const void* hi, size_t elem,
                      const char* name, int write);
// reports a race, or (if the other thread waits at a barrier) holds it back and returns
void race(int kind, const void* p, const void* pc_now, uint32_t other_tid, uint32_t pc_other);
void uninit_read(const void* p, const void* pc);
// something the specification does not promise: a PortabilityWarning, once per source line
void portability(const char* file, int line, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
// two threads' accesses to threadgroup memory ordered only by a threadgroup barrier without
// mem_flags::mem_threadgroup: the kernels that do it assume it orders them, the specification
// does not promise it (kind as race())
void exec_ordered(int kind, const void* p, const void* pc_now, uint32_t other_tid, uint32_t pc_other);
const char* buffer_name_for(const void* p, const void** lo, const void** hi);

// A buffer the launch left unbound reads as an address in [UNBOUND_BASE, UNBOUND_END), one
// UNBOUND_STRIDE per buffer index: never mapped (below the lowest address a process may map),
// so an access through a reference faults there, and the handler names the parameter.
enum { UNBOUND_BASE = 1024, UNBOUND_STRIDE = 1024, UNBOUND_END = UNBOUND_BASE + 32 * UNBOUND_STRIDE };
inline char* unbound_addr(int index) { return (char*)(uintptr_t)(UNBOUND_BASE + UNBOUND_STRIDE * index); }
inline int unbound_index(const void* p) {
  uintptr_t a = (uintptr_t)p;
  return a >= UNBOUND_BASE && a < UNBOUND_END ? (int)((a - UNBOUND_BASE) / UNBOUND_STRIDE) : -1;
}

struct alignas(32) Shadow {
  uint32_t w_stamp, r_stamp;
  uint16_t w_tid, r_tid, r2_tid, multi;
  uint32_t w_pc, r_pc, r2_pc;  // code offsets from Ctx::pc_base
};

// 16-bit float conversions (round to nearest even), usable in constant expressions
constexpr uint16_t f32_to_f16_bits(float f) {
  uint32_t x = __builtin_bit_cast(uint32_t, f);
  uint32_t sign = (x >> 16) & 0x8000u, mant = x & 0x7fffffu;
  int32_t exp = (int32_t)((x >> 23) & 0xffu);
  if (exp == 0xff) return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0u));
  int32_t e = exp - 127 + 15;
  if (e >= 0x1f) return (uint16_t)(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10) return (uint16_t)sign;
    mant |= 0x800000u;
    uint32_t shift = (uint32_t)(14 - e);
    uint32_t h = mant >> shift, rem = mant & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);
    if (rem > halfway || (rem == halfway && (h & 1u))) ++h;
    return (uint16_t)(sign | h);
  }
  uint32_t h = ((uint32_t)e << 10) | (mant >> 13), rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return (uint16_t)(sign | h);
}
constexpr float f16_bits_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0) {
    float f = (float)mant * (1.0f / 16777216.0f);  // mant * 2^-24
    return sign ? -f : f;
  }
  if (exp == 31) return __builtin_bit_cast(float, sign | 0x7f800000u | (mant << 13));
  return __builtin_bit_cast(float, sign | ((exp + 112u) << 23) | (mant << 13));
}
constexpr uint16_t f32_to_bf16_bits(float f) {
  uint32_t u = __builtin_bit_cast(uint32_t, f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);  // NaN stays NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
constexpr float bf16_bits_to_f32(uint16_t b) { return __builtin_bit_cast(float, (uint32_t)b << 16); }

#if defined(__clang__)
__attribute__((always_inline, nodebug))
#else
__attribute__((always_inline))
#endif
inline const void* here() {
  const void* p;
#if defined(__x86_64__)
  asm volatile("lea 0(%%rip), %0" : "=r"(p));
#elif defined(__aarch64__)
  asm volatile("adr %0, ." : "=r"(p));
#else
  p = __builtin_return_address(0);
#endif
  return p;
}

// ------------------------------------------------------------------ function constants
// Metal compiles a library once and specializes a pipeline by the values of its function
// constants. The emulator does likewise: a source with function constants is compiled once,
// its constants read from the specialization it is loaded as. kernel.py loads one copy of
// the object per set of values, each with the values beside it (<object>.fc), so every
// initializer that reads a function constant, at namespace scope too, runs with them: they
// are read when the object is loaded, before any launch. (build.py compiles the values in
// when a source uses a function constant where C++ wants a constant expression.)
//
// The value of function constant N as the value of a C++ literal of its kind cast to the
// constant's type, as (T)(literal) is where the values are compiled in.
struct FcRecord {
  int defined;
  char kind;  // b bool, i int, l long, u unsigned long, f double; 0 when not defined
  long l;
  unsigned long u;
  double d;
};
FcRecord fc_record(int n);    // runtime.cpp: read from <object>.fc (all undefined without one)
void fc_fail(int n, const char* why);  // recorded for kernel.py, which raises it after loading

template <class T, class V> T fc_cast(int n, V v) {
  if constexpr (std::is_constructible<T, V>::value) {
    return T(v);
  } else {
    fc_fail(n, "its type cannot be made from a value of this kind");
    return T{};
  }
}
template <class T> T fc_value(int n) {
  FcRecord r = fc_record(n);
  switch (r.defined ? r.kind : 0) {
    case 'b': return fc_cast<T>(n, r.l != 0);
    case 'i': return fc_cast<T>(n, (int)r.l);
    case 'l': return fc_cast<T>(n, r.l);
    case 'u': return fc_cast<T>(n, r.u);
    case 'f': return fc_cast<T>(n, r.d);
    default: return T{};
  }
}
inline bool fc_defined(int n) { return fc_record(n).defined != 0; }

}  // namespace mslemu
