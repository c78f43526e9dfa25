// <metal_atomic> (original code). Device memory is shared by the worker processes, so the
// operations are real atomics. The operations Metal defines for each type are the only
// ones that compile: float has load, store, exchange, compare-exchange, add and sub;
// bool has no arithmetic; ulong has min and max (besides load, store, exchange).
#pragma once

namespace metal {
template <class T> struct atomic {
  static_assert(std::is_same_v<T, int> || std::is_same_v<T, uint> || std::is_same_v<T, bool> ||
                    std::is_same_v<T, ulong> || std::is_same_v<T, float>,
                "Metal has atomic<T> for int, uint, bool, ulong and float");
  T v;
};
typedef atomic<int> atomic_int;
typedef atomic<uint> atomic_uint;
typedef atomic<bool> atomic_bool;
typedef atomic<ulong> atomic_ulong;
typedef atomic<float> atomic_float;
}  // namespace metal

namespace mslemu {
namespace atomics {
using metal::memory_order;
template <class P> MSLEMU_AI auto* raw(const P& p) {
  if constexpr (is_ptr<P>::value) return p.check(); else return p;
}
template <class P> using value_t = decltype(raw(std::declval<P>())->v);

template <class T, class F> MSLEMU_AI T rmw(T* v, F f) {
  if constexpr (sizeof(T) == 4 || sizeof(T) == 8) {
    using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    U* u = (U*)v;
    U ob = __atomic_load_n(u, __ATOMIC_RELAXED);
    for (;;) {
      T o; memcpy(&o, &ob, sizeof(T));
      T n = f(o);
      U nb; memcpy(&nb, &n, sizeof(T));
      if (__atomic_compare_exchange_n(u, &ob, nb, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) return o;
    }
  } else {
    T o; __atomic_load(v, &o, __ATOMIC_SEQ_CST);
    for (;;) {
      T n = f(o);
      if (__atomic_compare_exchange(v, &o, &n, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) return o;
    }
  }
}
enum Kind { ADD, SUB, MIN, MAX, AND, OR, XOR };
template <class T> inline constexpr bool allowed(Kind k) {
  if constexpr (std::is_same_v<T, float>) return k == ADD || k == SUB;
  else if constexpr (std::is_same_v<T, bool>) return false;
  else if constexpr (std::is_same_v<T, ulong>) return k == MIN || k == MAX;
  else return true;
}
#define MSLEMU_AT(name, kind, expr)                                                                    \
  template <class P, class U, class... O> MSLEMU_AI auto atomic_##name##_explicit(const P& p, U val_, O...) { \
    auto* a = raw(p); using T = decltype(a->v);                                                         \
    static_assert(allowed<T>(kind), "Metal has no atomic_" #name "_explicit for this atomic type");    \
    T x = (T)val(val_);                                                                                 \
    return rmw(&a->v, [&](T old) -> T { return (T)(expr); }); }
MSLEMU_AT(fetch_add, ADD, old + x)
MSLEMU_AT(fetch_sub, SUB, old - x)
MSLEMU_AT(fetch_max, MAX, old < x ? x : old)
MSLEMU_AT(fetch_min, MIN, x < old ? x : old)
MSLEMU_AT(fetch_and, AND, old & x)
MSLEMU_AT(fetch_or, OR, old | x)
MSLEMU_AT(fetch_xor, XOR, old ^ x)
#undef MSLEMU_AT
template <class P, class U, class... O> MSLEMU_AI auto atomic_exchange_explicit(const P& p, U val_, O...) {
  auto* a = raw(p); using T = decltype(a->v); T x = (T)val(val_); T r;
  __atomic_exchange(&a->v, &x, &r, __ATOMIC_SEQ_CST); return r;
}
template <class P, class... O> MSLEMU_AI auto atomic_load_explicit(const P& p, O...) {
  auto* a = raw(p); using T = decltype(a->v); T r; __atomic_load(&a->v, &r, __ATOMIC_SEQ_CST); return r;
}
template <class P, class U, class... O> MSLEMU_AI void atomic_store_explicit(const P& p, U v, O...) {
  auto* a = raw(p); using T = decltype(a->v); T x = (T)val(v); __atomic_store(&a->v, &x, __ATOMIC_SEQ_CST);
}
// compares the bits, like C++: a float NaN in memory equals the same NaN expected
template <class P, class E, class U, class... O>
MSLEMU_AI bool atomic_compare_exchange_weak_explicit(const P& p, E expected, U desired, O...) {
  auto* a = raw(p); using T = decltype(a->v);
  auto* ex = raw(expected);
  T d = (T)val(desired); T e = (T)*ex;
  bool ok = __atomic_compare_exchange(&a->v, &e, &d, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  *ex = e; return ok;
}
template <class P, class E, class U, class... O>
MSLEMU_AI bool atomic_compare_exchange_strong_explicit(const P& p, E expected, U desired, O... o) {
  return atomic_compare_exchange_weak_explicit(p, expected, desired, o...);
}
}  // namespace atomics
}  // namespace mslemu

#define MSLEMU_ATOMIC_LIST(X) X(atomic_fetch_add_explicit) X(atomic_fetch_sub_explicit) X(atomic_fetch_max_explicit) \
  X(atomic_fetch_min_explicit) X(atomic_fetch_and_explicit) X(atomic_fetch_or_explicit) X(atomic_fetch_xor_explicit)    \
  X(atomic_exchange_explicit) X(atomic_load_explicit) X(atomic_store_explicit) X(atomic_compare_exchange_weak_explicit) \
  X(atomic_compare_exchange_strong_explicit)
#define MSLEMU_USING_ATOMIC(name) using ::mslemu::atomics::name;
namespace metal { MSLEMU_ATOMIC_LIST(MSLEMU_USING_ATOMIC) }
#undef MSLEMU_USING_ATOMIC
