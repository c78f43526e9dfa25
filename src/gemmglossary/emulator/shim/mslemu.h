// Metal Shading Language standard library shim for the gemmglossary CPU emulator.
// Original code. Deliberately avoids <cmath>/<cstdlib> so that `using namespace metal;`
// never meets ambiguous global overloads.
//
// Layout: this file holds the address spaces (checked pointers, threadgroup memory and
// the proxies that record every threadgroup read and write for the race check); the
// library follows in one header per chapter of the specification's standard library.
#pragma once
#include <cstdint>
#include <cstddef>
#include <cstring>
#include <type_traits>
#include <utility>
#include <limits>
#include "mslemu_rt.h"

#if defined(__clang__)
// clang keeps no inline chain for the PCs taken inside these helpers; without debug info of
// their own, their instructions carry the line of the kernel code that called them
#define MSLEMU_AI __attribute__((always_inline, nodebug)) inline
#else
#define MSLEMU_AI __attribute__((always_inline)) inline
#endif
// library functions that take no program counter: the compiler decides what to inline
#define MSLEMU_FN inline
// helpers that need no inline chain to name a kernel line (they are handed the program
// counter of the line they report on, or report by a parameter's name): compiled once per
// kernel, out of line (COLD: they run only when the launch has found something, and the
// compiler moves their calls off the fast path)
#define MSLEMU_OUTLINE __attribute__((noinline)) inline
#define MSLEMU_COLD __attribute__((noinline, cold)) inline

#include "mslemu_f16.h"
#if defined(__FLT16_MAX__) && !defined(MSLEMU_SOFT_HALF) && \
    (defined(__clang__) || defined(__x86_64__) || (defined(__GNUC__) && __GNUC__ >= 13))
typedef _Float16 half;  // g++ >= 12 and clang >= 15 on x86-64
namespace mslemu { template <> struct is_half<_Float16> : std::true_type {}; }
#else
typedef mslemu::f16<0> half;  // no _Float16 (e.g. g++ 12 on aarch64): bits computed in float
#endif
typedef mslemu::bfloat bfloat;
typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned char uchar;
typedef unsigned long ulong;
using std::size_t;
using std::ptrdiff_t;

namespace mslemu {

template <class T>
inline constexpr bool is_arith_v = std::is_arithmetic_v<T> || is_half<std::remove_cv_t<T>>::value;
template <class...> inline constexpr bool dependent_false = false;

// The type Metal gives `c ? a : b`, for the casts of the rewriter's conditionals.py (only with
// the software half type, which C++ finds ambiguous beside another arithmetic type): C++'s own,
// unless one arm is a half and the other another arithmetic type, where the usual arithmetic
// conversions apply (half and float: float; half and an integer or bool: half). A and B are
// decltype((arm)), so an lvalue arm of C++'s own case stays an lvalue.
template <class A, class B> struct cond_cxx { using type = decltype(true ? std::declval<A>() : std::declval<B>()); };
template <class H, class X> struct cond_half { using type = std::conditional_t<std::is_floating_point_v<X>, X, H>; };
template <class A, class B, class DA = std::remove_cv_t<std::remove_reference_t<A>>,
          class DB = std::remove_cv_t<std::remove_reference_t<B>>>
struct cond_type : std::conditional_t<is_half<DA>::value && !is_half<DB>::value && std::is_arithmetic_v<DB>, cond_half<DA, DB>,
                   std::conditional_t<is_half<DB>::value && !is_half<DA>::value && std::is_arithmetic_v<DA>,
                                      cond_half<DB, DA>, cond_cxx<A, B>>> {};
template <class A, class B> using cond_t = typename cond_type<A, B>::type;

// ---------------------------------------------------------------- race shadow
// one record per byte: a GPU stores bytes, so two threads writing neighbouring bytes
// (a threadgroup bool or uchar array) do not race; an access is recorded at its first byte
MSLEMU_AI Shadow& shadow_of(const void* p) {
  return ((Shadow*)ctx.shadow)[(const char*)p - ctx.arena];
}
MSLEMU_AI bool stale(uint32_t stamp, uint16_t tid_other, uint32_t tid_now) {
  if (stamp < ctx.tg_sync) return true;
  if ((tid_other >> 5) == (tid_now >> 5) && stamp < ctx.sg_sync[tid_now >> 5]) return true;
  return false;
}
MSLEMU_AI uint32_t pcoff(const void* pc) { return (uint32_t)((uintptr_t)pc - ctx.pc_base); }
// a conflicting access by another thread since the last barrier with mem_threadgroup: a race,
// unless a barrier without memory flags lies in between: MLX's kernels assume that barrier
// orders threadgroup memory too, which no Apple document promises, so it warns (#10 §3).
// A write after another thread's read (kind 3) across such a barrier is no race at all: the
// barrier is an execution barrier, so the read was executed before the write could be, and
// what mem_none leaves out is whether a write before the barrier is visible after it, which
// a read before it cannot depend on (llama.cpp's soft_max reuses its buffer so)
// (Out of line, like bad_access below: it runs only on a finding, and it is given the PC of
// the access, so no inline chain is needed to name the line. Inlined, the two were copied
// into every access: a steel GEMM kernel's code was 67.0 KB with them, 51.5 KB without.)
MSLEMU_COLD void conflict(int kind, const void* p, const void* pc, uint32_t stamp, uint32_t other, uint32_t other_pc) {
  if (stamp < ctx.exec_sync) {
    if (kind != 3) exec_ordered(kind, p, pc, other, other_pc);
  } else {
    race(kind, p, pc, other, other_pc);
  }
}
// (returns whether a thread of this threadgroup wrote the byte; `whole`: part of an object,
// whose padding no field write covers: tg_read_n warns when no byte of it was written)
template <bool whole = false> MSLEMU_AI bool tg_read(const void* p, const void* pc) {
  if (!ctx.race_check) return true;
  Shadow& s = shadow_of(p);
  uint32_t t = ctx.cur->tid;
  // a write by another thread since the last barrier?
  if (__builtin_expect(s.w_stamp >= ctx.tg_sync, 0) && s.w_tid != t && !stale(s.w_stamp, s.w_tid, t))
    conflict(1, p, pc, s.w_stamp, s.w_tid, s.w_pc);
  bool written = s.w_stamp >= ctx.tg_start;
  if (!whole && __builtin_expect(!written, 0)) uninit_read(p, pc);
  // remember up to two readers since the last barrier
  if (s.r_stamp >= ctx.tg_sync) {
    if (s.r_tid == t || s.multi) return written;
    if (!stale(s.r_stamp, s.r_tid, t)) { s.multi = 1; s.r2_tid = (uint16_t)t; s.r2_pc = pcoff(pc); return written; }
  }
  s.multi = 0; s.r_tid = (uint16_t)t; s.r_stamp = ctx.clock; s.r_pc = pcoff(pc);
  return written;
}
MSLEMU_AI void tg_write(const void* p, const void* pc) {
  if (!ctx.race_check) return;
  Shadow& s = shadow_of(p);
  uint32_t t = ctx.cur->tid;
  if (s.w_stamp >= ctx.tg_sync && s.w_tid != t && !stale(s.w_stamp, s.w_tid, t)) conflict(2, p, pc, s.w_stamp, s.w_tid, s.w_pc);
  if (s.r_stamp >= ctx.tg_sync && !stale(s.r_stamp, s.r_tid, t)) {
    if (s.r_tid != t) conflict(3, p, pc, s.r_stamp, s.r_tid, s.r_pc);
    if (s.multi && s.r2_tid != t) conflict(3, p, pc, s.r_stamp, s.r2_tid, s.r2_pc);
  }
  s.w_tid = (uint16_t)t; s.w_stamp = ctx.clock; s.w_pc = pcoff(pc);
}
// every byte of an object, so that an access to any one of its fields meets the record
// (out of line: a loop over the bytes, given the access's PC; one call costs less than it)
MSLEMU_OUTLINE void tg_read_n(const void* p, size_t n, const void* pc) {
  bool any = false;
  for (size_t k = 0; k < n; ++k) any |= tg_read<true>((const char*)p + k, pc);
  if (ctx.race_check && !any) uninit_read(p, pc);
}
MSLEMU_OUTLINE void tg_write_n(const void* p, size_t n, const void* pc) {
  for (size_t k = 0; k < n; ++k) tg_write((const char*)p + k, pc);
}

// ---------------------------------------------------------------- address spaces
// the AddressSpace enum is in mslemu_abi.h

template <int A, class T> struct ptr;
// an access outside [lo, hi): through a buffer the launch left unbound, or out of bounds
MSLEMU_COLD void* bad_access(const void* pc, const void* p, const char* lo, const char* hi, size_t elem, const char* name) {
  if (lo == hi && unbound_index(lo) >= 0)
    fail(E_OOB, "kernel accessed parameter '%s' [[buffer(%d)]] at {{pc:%lx}}, but the launch left that buffer unbound "
         "(bind it, or keep the kernel from reading it)", name, unbound_index(lo),
         (unsigned long)((uintptr_t)pc - ctx.pc_base));
  return oob(pc, p, lo, hi, elem, name, 0);
}
template <class S> struct tg_vref;   // a vector element of threadgroup memory (mslemu_tgvec.h)
template <class S> struct tg_varrow;
template <class T> struct is_vec_like : std::false_type {};  // vec and packed_vec (specialized later)

// A scalar element of threadgroup memory: reads and writes go through the race check.
template <class T> struct tg_ref {
  T* p;
  MSLEMU_AI operator T() const { tg_read(p, here()); return *p; }
  MSLEMU_AI T get() const { tg_read(p, here()); return *p; }
  // static_cast<float>(element) where T is the software half type or bfloat: one user-defined
  // conversion (this one) instead of two (to T, then to float); implicit where T's own is
  // (`device uint* out; out[i] = tile[i];` of a bfloat tile, as MLX's sort compiles)
  template <class U, class = std::enable_if_t<is_arith_v<U> && !std::is_same_v<U, T> && std::is_class_v<T> &&
                                              !std::is_convertible_v<T, U>>>
  MSLEMU_AI explicit operator U() const { return (U)get(); }
  template <class U, class = std::enable_if_t<is_arith_v<U> && !std::is_same_v<U, T> && std::is_class_v<T> &&
                                              std::is_convertible_v<T, U>>, class = void>
  MSLEMU_AI operator U() const { return (U)get(); }
  MSLEMU_AI const tg_ref& operator=(T v) const { tg_write(p, here()); *p = v; return *this; }
  MSLEMU_AI const tg_ref& operator=(const tg_ref& o) const { T v = o.get(); tg_write(p, here()); *p = v; return *this; }
#define MSLEMU_CMP(op) \
  template <class U> MSLEMU_AI const tg_ref& operator op##=(const U& v) const { \
    tg_read(p, here()); T r = (T)(*p op v); tg_write(p, here()); *p = r; return *this; }
  MSLEMU_CMP(+) MSLEMU_CMP(-) MSLEMU_CMP(*) MSLEMU_CMP(/) MSLEMU_CMP(%) MSLEMU_CMP(&) MSLEMU_CMP(|)
  MSLEMU_CMP(^) MSLEMU_CMP(<<) MSLEMU_CMP(>>)
#undef MSLEMU_CMP
  MSLEMU_AI T operator++(int) const { T v = get(); tg_write(p, here()); *p = v + 1; return v; }
  MSLEMU_AI T operator--(int) const { T v = get(); tg_write(p, here()); *p = v - 1; return v; }
  MSLEMU_AI const tg_ref& operator++() const { T v = get(); tg_write(p, here()); *p = v + 1; return *this; }
  MSLEMU_AI const tg_ref& operator--() const { T v = get(); tg_write(p, here()); *p = v - 1; return *this; }
  ptr<AS_THREADGROUP, T> operator&() const;
};

// threadgroup objects of class type (e.g. MLX's ReadVector): whole-object reads and writes
template <class T> struct tg_obj_ref {
  T* p;
  MSLEMU_AI operator T() const { tg_read_n(p, sizeof(T), here()); return *p; }
  MSLEMU_AI const tg_obj_ref& operator=(const T& v) const { T t = v; tg_write_n(p, sizeof(T), here()); *p = t; return *this; }
  MSLEMU_AI const tg_obj_ref& operator=(const tg_obj_ref& o) const {
    T t = (T)o; tg_write_n(p, sizeof(T), here()); *p = t; return *this; }
  MSLEMU_AI T* operator->() const { tg_read_n(p, sizeof(T), here()); return p; }
  ptr<3, T> operator&() const;
};

template <int A, class T> struct ptr {
  T* p;
  char* lo;
  char* hi;
  const char* name;
  using element_type = T;
  static constexpr int address_space = A;
  using E = std::conditional_t<std::is_void_v<T>, char, T>;

  ptr() = default;
  MSLEMU_AI ptr(std::nullptr_t) : p(nullptr), lo(nullptr), hi(nullptr), name("null") {}
  MSLEMU_AI ptr(T* q, char* l, char* h, const char* n) : p(q), lo(l), hi(h), name(n) {}
  // from a raw pointer (e.g. &A[i]): recover the bounds of the buffer that holds it
  MSLEMU_AI ptr(T* q) : p(q) {
    const void *l = nullptr, *h = nullptr;
    name = buffer_name_for((const void*)q, &l, &h);
    lo = (char*)l; hi = (char*)h;
  }
  // T* -> const T*
  template <class U, class = std::enable_if_t<std::is_same_v<const U, T> && !std::is_same_v<U, T>>>
  MSLEMU_AI ptr(const ptr<A, U>& o) : p(o.p), lo(o.lo), hi(o.hi), name(o.name) {}
  // T* -> void*
  template <class U, class = std::enable_if_t<std::is_void_v<T> && !std::is_void_v<U> &&
                                              (std::is_const_v<T> || !std::is_const_v<U>)>, class = void, class = void>
  MSLEMU_AI ptr(const ptr<A, U>& o) : p((T*)o.p), lo(o.lo), hi(o.hi), name(o.name) {}
  // explicit reinterpretation (C-style / static casts between pointer types of one space)
  template <class U, class = std::enable_if_t<!std::is_same_v<const U, T> && !(std::is_void_v<T> && !std::is_void_v<U>)>, class = void>
  MSLEMU_AI explicit ptr(const ptr<A, U>& o) : p((T*)(void*)o.p), lo(o.lo), hi(o.hi), name(o.name) {}
  template <class U, class = std::enable_if_t<!std::is_same_v<std::remove_cv_t<U>, std::remove_cv_t<T>>>>
  MSLEMU_AI explicit ptr(U* q) : p((T*)(void*)q) {
    const void *l = nullptr, *h = nullptr;
    name = buffer_name_for((const void*)q, &l, &h);
    lo = (char*)l; hi = (char*)h;
  }
  MSLEMU_AI explicit ptr(uintptr_t raw) : p((T*)raw), lo(nullptr), hi(nullptr), name("raw address") {}
  MSLEMU_AI explicit ptr(int raw) : p((T*)(uintptr_t)raw), lo(nullptr), hi(nullptr), name("raw address") {}

  // The reported pc is taken inside the failing branch: taken before it, the compiler may
  // schedule it among the instructions of an earlier line, and the report names that line.
  MSLEMU_AI T* check() const {
    if (__builtin_expect((char*)p < lo || (char*)p + sizeof(E) > hi, 0))
      return (T*)bad_access(here(), p, lo, hi, sizeof(E), name);
    return p;
  }
  MSLEMU_AI T* check_at(ptrdiff_t i) const {
    T* q = p + i;
    if (__builtin_expect((char*)q < lo || (char*)q + sizeof(T) > hi, 0)) return (T*)bad_access(here(), q, lo, hi, sizeof(T), name);
    return q;
  }
  MSLEMU_AI decltype(auto) operator[](ptrdiff_t i) const {
    T* q = check_at(i);
    using B = std::remove_cv_t<T>;
    if constexpr (A == AS_THREADGROUP && is_arith_v<B>) return tg_ref<T>{q};
    else if constexpr (A == AS_THREADGROUP && is_vec_like<B>::value) return tg_vref<T>{q};
    else if constexpr (A == AS_THREADGROUP && std::is_class_v<T>) return tg_obj_ref<T>{q};
    else if constexpr (A == AS_THREADGROUP) { tg_read(q, here()); return (T&)*q; }
    else return (T&)*q;
  }
  MSLEMU_AI decltype(auto) operator*() const { return (*this)[0]; }
  MSLEMU_AI auto operator->() const {
    if constexpr (A == AS_THREADGROUP && is_vec_like<std::remove_cv_t<T>>::value) return tg_varrow<T>{{check()}};
    else return check();
  }
  MSLEMU_AI explicit operator bool() const { return p != nullptr; }
  MSLEMU_AI bool operator!() const { return p == nullptr; }
  MSLEMU_AI T* raw() const { return p; }
  template <class U, class = std::enable_if_t<std::is_integral_v<U>>>
  MSLEMU_AI ptr operator+(U i) const { return ptr(p + i, lo, hi, name); }
  template <class U, class = std::enable_if_t<std::is_integral_v<U>>>
  MSLEMU_AI friend ptr operator+(U i, const ptr& a) { return ptr(a.p + i, a.lo, a.hi, a.name); }
  template <class U, class = std::enable_if_t<std::is_integral_v<U>>>
  MSLEMU_AI ptr operator-(U i) const { return ptr(p - i, lo, hi, name); }
  template <class U> MSLEMU_AI ptrdiff_t operator-(const ptr<A, U>& o) const { return p - o.p; }
  template <class U> MSLEMU_AI ptr& operator+=(U i) { p += i; return *this; }
  template <class U> MSLEMU_AI ptr& operator-=(U i) { p -= i; return *this; }
  MSLEMU_AI ptr& operator++() { ++p; return *this; }
  MSLEMU_AI ptr& operator--() { --p; return *this; }
  MSLEMU_AI ptr operator++(int) { ptr r = *this; ++p; return r; }
  MSLEMU_AI ptr operator--(int) { ptr r = *this; --p; return r; }
  template <class U> MSLEMU_AI bool operator==(const ptr<A, U>& o) const { return (const void*)p == (const void*)o.p; }
  template <class U> MSLEMU_AI bool operator!=(const ptr<A, U>& o) const { return (const void*)p != (const void*)o.p; }
  template <class U> MSLEMU_AI bool operator<(const ptr<A, U>& o) const { return (const void*)p < (const void*)o.p; }
  template <class U> MSLEMU_AI bool operator>(const ptr<A, U>& o) const { return (const void*)p > (const void*)o.p; }
  template <class U> MSLEMU_AI bool operator<=(const ptr<A, U>& o) const { return (const void*)p <= (const void*)o.p; }
  template <class U> MSLEMU_AI bool operator>=(const ptr<A, U>& o) const { return (const void*)p >= (const void*)o.p; }
  MSLEMU_AI bool operator==(std::nullptr_t) const { return p == nullptr; }
  MSLEMU_AI bool operator!=(std::nullptr_t) const { return p != nullptr; }
};

template <class T> ptr<AS_THREADGROUP, T> tg_obj_ref<T>::operator&() const { return ptr<AS_THREADGROUP, T>((T*)p); }
template <class T> MSLEMU_AI ptr<AS_THREADGROUP, T> tg_ref<T>::operator&() const {
  return ptr<AS_THREADGROUP, T>((T*)p);
}

template <class P> struct is_ptr : std::false_type {};
template <int A, class T> struct is_ptr<ptr<A, T>> : std::true_type {};

template <class T, size_t... D> struct tg_view;

// reinterpret_cast replacement: works for the wrapped pointer types as well as raw ones
template <class To, class From> MSLEMU_AI To reinterpret_cast_(From&& x) {
  using F = std::remove_cv_t<std::remove_reference_t<From>>;
  if constexpr (is_ptr<To>::value && is_ptr<F>::value) return To(x);
  else if constexpr (is_ptr<To>::value && std::is_class_v<F> && !is_ptr<F>::value)  // a threadgroup array decays
    return To(ptr<AS_THREADGROUP, typename F::element_type>(x.p, x.lo, x.hi, x.name));
  else if constexpr (is_ptr<To>::value && std::is_pointer_v<F>) return To((typename To::element_type*)(void*)x);
  else if constexpr (is_ptr<To>::value) return To((uintptr_t)x);
  else if constexpr (is_ptr<F>::value && std::is_pointer_v<To>) return reinterpret_cast<To>(x.p);
  else return reinterpret_cast<To>(x);
}

// threadgroup arrays declared in kernel bodies: one allocation per threadgroup, shared by
// every fiber of it.
struct TgSlot { uint64_t gen; void* p; };
template <class T, size_t D0, size_t... D> struct tg_view<T, D0, D...> {
  T* p; char* lo; char* hi; const char* name;
  using element_type = T;
  static constexpr size_t stride = (D * ... * 1);
  tg_view() = default;
  MSLEMU_AI tg_view(T* p_, char* lo_, char* hi_, const char* name_) : p(p_), lo(lo_), hi(hi_), name(name_) {}
  // `cond ? nullptr : array`: the array decays to a pointer, which may be null
  MSLEMU_AI tg_view(std::nullptr_t) : p(nullptr), lo(nullptr), hi(nullptr), name("null") {}
  MSLEMU_AI decltype(auto) operator[](ptrdiff_t i) const {
    if constexpr (sizeof...(D) == 0) return ptr<AS_THREADGROUP, T>(p, lo, hi, name)[i];
    else return tg_view<T, D...>(p + i * (ptrdiff_t)stride, lo, hi, name);
  }
  MSLEMU_AI decltype(auto) operator*() const { return (*this)[0]; }
  MSLEMU_AI operator ptr<AS_THREADGROUP, T>() const { return ptr<AS_THREADGROUP, T>(p, lo, hi, name); }
  MSLEMU_AI operator ptr<AS_THREADGROUP, const T>() const { return ptr<AS_THREADGROUP, const T>(p, lo, hi, name); }
  MSLEMU_AI operator ptr<AS_THREADGROUP, void>() const { return ptr<AS_THREADGROUP, void>((void*)p, lo, hi, name); }
  MSLEMU_AI operator ptr<AS_THREADGROUP, const void>() const { return ptr<AS_THREADGROUP, const void>((const void*)p, lo, hi, name); }
  // a cast to a pointer to another type (`(threadgroup half4x4 *) sk` of a `threadgroup half sk[N]`,
  // llama.cpp's flash attention): the array decays, and the pointer is reinterpreted, with its bounds
  template <class U, class = std::enable_if_t<!std::is_same_v<std::remove_cv_t<U>, T> && !std::is_void_v<U>>>
  MSLEMU_AI explicit operator ptr<AS_THREADGROUP, U>() const { return ptr<AS_THREADGROUP, U>((U*)(void*)p, lo, hi, name); }
  MSLEMU_AI ptr<AS_THREADGROUP, T> operator&() const { return ptr<AS_THREADGROUP, T>(p, lo, hi, name); }
  template <class U, class = std::enable_if_t<std::is_integral_v<U>>>
  MSLEMU_AI ptr<AS_THREADGROUP, T> operator+(U i) const {
    static_assert(sizeof...(D) == 0, "pointer arithmetic on a multi-dimensional threadgroup array");
    return ptr<AS_THREADGROUP, T>(p + i, lo, hi, name);
  }
  template <class U, class = std::enable_if_t<std::is_integral_v<U>>>
  MSLEMU_AI ptr<AS_THREADGROUP, T> operator-(U i) const {
    static_assert(sizeof...(D) == 0, "pointer arithmetic on a multi-dimensional threadgroup array");
    return ptr<AS_THREADGROUP, T>(p - i, lo, hi, name);
  }
  MSLEMU_AI bool operator==(std::nullptr_t) const { return p == nullptr; }
  MSLEMU_AI bool operator!=(std::nullptr_t) const { return p != nullptr; }
};
template <class T, size_t... D> struct tg_array : tg_view<T, D...> {
  tg_array() = default;
  MSLEMU_AI tg_array(std::nullptr_t) : tg_view<T, D...>(nullptr) {}
  static tg_array get(TgSlot& s, const char* name) {
    if (s.gen != ctx.tg_gen) {
      static const uint32_t dims[] = {(uint32_t)D...};
      s.p = tg_alloc(sizeof(T) * (D * ...), alignof(T) < 16 ? 16 : alignof(T), name, sizeof(T), sizeof...(D), dims);
      s.gen = ctx.tg_gen;
    }
    tg_array a;
    a.p = (T*)s.p; a.lo = (char*)s.p; a.hi = (char*)s.p + sizeof(T) * (D * ...); a.name = name;
    return a;
  }
};
// a one-dimensional threadgroup array passed to a function decays to a pointer, so that a
// template's `threadgroup T* p` deduces T (the rewriter wraps such arguments); anything else
// passes as it is
template <class X> struct is_tg_array_1d : std::false_type {};
template <class T, size_t D0> struct is_tg_array_1d<tg_view<T, D0>> : std::true_type {};
template <class T, size_t D0> struct is_tg_array_1d<tg_array<T, D0>> : std::true_type {};
template <class X> MSLEMU_AI decltype(auto) decay_array(X&& x) {
  using B = std::remove_cv_t<std::remove_reference_t<X>>;
  if constexpr (is_tg_array_1d<B>::value)
    return ptr<AS_THREADGROUP, typename B::element_type>(x.p, x.lo, x.hi, x.name);
  else
    return std::forward<X>(x);
}
// threadgroup scalars
template <class T> struct tg_var {
  T* p;
  static tg_var get(TgSlot& s, const char* name) {
    if (s.gen != ctx.tg_gen) { s.p = tg_alloc(sizeof(T), alignof(T) < 16 ? 16 : alignof(T), name, sizeof(T)); s.gen = ctx.tg_gen; }
    return tg_var{(T*)s.p};
  }
  MSLEMU_AI decltype(auto) ref() const { return ptr<AS_THREADGROUP, T>(p, (char*)p, (char*)(p + 1), "")[0]; }
  MSLEMU_AI operator T() const { return ref(); }
  template <class U> MSLEMU_AI const tg_var& operator=(const U& v) const { ref() = (T)v; return *this; }
#define MSLEMU_TGV(op) template <class U> MSLEMU_AI const tg_var& operator op(const U& v) const { ref() op v; return *this; }
  MSLEMU_TGV(+=) MSLEMU_TGV(-=) MSLEMU_TGV(*=) MSLEMU_TGV(/=) MSLEMU_TGV(%=) MSLEMU_TGV(|=) MSLEMU_TGV(&=) MSLEMU_TGV(^=)
  MSLEMU_TGV(<<=) MSLEMU_TGV(>>=)
#undef MSLEMU_TGV
  MSLEMU_AI T operator++(int) const { return ref()++; }
  MSLEMU_AI T operator--(int) const { return ref()--; }
  MSLEMU_AI const tg_var& operator++() const { ++ref(); return *this; }
  MSLEMU_AI const tg_var& operator--() const { --ref(); return *this; }
  MSLEMU_AI ptr<AS_THREADGROUP, T> operator&() const { return ptr<AS_THREADGROUP, T>(p); }
};

}  // namespace mslemu

#include "mslemu_vec.h"
#include "mslemu_packed.h"
#include "mslemu_tgvec.h"
#include "mslemu_proxy.h"
#include "mslemu_traits.h"
#include "mslemu_math.h"
#include "mslemu_integer.h"
#include "mslemu_common.h"
#include "mslemu_geometric.h"
#include "mslemu_matrix.h"
#include "mslemu_pack.h"
#include "mslemu_sync.h"
#include "mslemu_simd.h"
#include "mslemu_sgmatrix.h"
#include "mslemu_atomic.h"
#include "mslemu_uniform.h"
#include "mslemu_misc.h"
#include "mslemu_unsupported.h"
#include "mslemu_builtins.h"
#include "mslemu_bind.h"
