// SIMD-group and quad-group functions (original code).
//
// Each call is a rendezvous of the simdgroup's live lanes (runtime.cpp: collective); the
// last lane to arrive combines every lane's value. Quad-group functions are the same
// rendezvous, combined per group of four lanes. Reductions and prefix operations go over
// the active lanes in lane order. Reading the value of a lane that is not active (it
// returned, or lies past the end of a partial simdgroup) is undefined in Metal: the lane
// gets its own value and the launch reports a PortabilityWarning naming the line.
#pragma once

namespace metal {
struct simd_vote {
  typedef ulong vote_t;
  vote_t v;
  vote_t active;  // the lanes that were active when the vote was taken
  MSLEMU_AI explicit constexpr simd_vote(vote_t x = 0) : v(x), active(~0ul) {}
  MSLEMU_AI constexpr simd_vote(vote_t x, vote_t a) : v(x), active(a) {}
  MSLEMU_AI explicit constexpr operator vote_t() const { return v; }
  MSLEMU_AI constexpr bool all() const { return (v & active) == active; }
  MSLEMU_AI constexpr bool any() const { return (v & active) != 0; }
};
struct quad_vote {
  typedef ushort vote_t;
  vote_t v;
  vote_t active;
  MSLEMU_AI explicit constexpr quad_vote(vote_t x = 0) : v(x), active(0xf) {}
  MSLEMU_AI constexpr quad_vote(vote_t x, vote_t a) : v(x), active(a) {}
  MSLEMU_AI explicit constexpr operator vote_t() const { return v; }
  MSLEMU_AI constexpr bool all() const { return (v & active) == active; }
  MSLEMU_AI constexpr bool any() const { return (v & active) != 0; }
};
}  // namespace metal

namespace mslemu {
namespace simd {
using namespace metal;
using namespace ::mslemu::ops;  // the op codes (mslemu_abi.h), not visible to kernels: `Op` is a common name

// the value of one lane, and what a shuffle-and-fill also carries
template <class T> struct fill_pair { T data, fill; };
template <class T> struct is_fill_pair : std::false_type {};
template <class T> struct is_fill_pair<fill_pair<T>> : std::true_type {};
template <class T> inline constexpr bool reducible_v = is_arith_v<typename comp<T>::type> && !std::is_same_v<T, bool>;

template <class T> MSLEMU_AI T reduce(int op, T a, T b) {
  if (op == OP_SUM || op == OP_PREFIX_EXCL_SUM || op == OP_PREFIX_INCL_SUM) return (T)(a + b);
  if (op == OP_PRODUCT || op == OP_PREFIX_EXCL_PRODUCT || op == OP_PREFIX_INCL_PRODUCT) return (T)(a * b);
  if (op == OP_MAX) return (T)common::max(a, b);
  if (op == OP_MIN) return (T)common::min(a, b);
  if constexpr (is_int_elem_v<T>) {
    if (op == OP_AND) return (T)(a & b);
    if (op == OP_OR) return (T)(a | b);
    if (op == OP_XOR) return (T)(a ^ b);
  }
  return a;
}
template <class T> MSLEMU_AI T identity(int op) {
  return (op == OP_PREFIX_EXCL_PRODUCT || op == OP_PREFIX_INCL_PRODUCT) ? T(1) : T(0);
}

inline const char* op_label(int op_code) {
  static const char* const names[] = {
      "?", "sum", "product", "max", "min", "shuffle", "shuffle_xor", "shuffle_up", "shuffle_down", "broadcast",
      "broadcast_first", "prefix_exclusive_sum", "prefix_inclusive_sum", "all", "any", "matrix multiply", "and", "or",
      "xor", "shuffle_rotate_down", "shuffle_rotate_up", "is_first", "prefix_exclusive_product",
      "prefix_inclusive_product", "ballot", "active_threads_mask", "shuffle_and_fill_up", "shuffle_and_fill_down"};
  int op = op_code & ~OP_QUAD;
  return op > 0 && op < (int)(sizeof names / sizeof *names) ? names[op] : "?";
}
// a lane read the value of a lane that is not active
inline void inactive_read(int op_code, const char* file, int line, int lane, int src, uint32_t sg) {
  portability(file, line, "%s_%s at %s:%d: lane %d of simdgroup %u reads lane %d, which is not active (it returned, or lies "
              "past the end of the threadgroup); the Metal specification does not say what such a read returns, the "
              "emulator gives the lane its own value", (op_code & OP_QUAD) ? "quad" : "simd", op_label(op_code), file ? file : "?", line, lane, sg, src);
}

// combine the values of the lanes of one simdgroup (L[i] is lane i, or null when inactive)
template <class T> void combine(int op_code, Fiber** L, int n) {
  const bool quad = op_code & OP_QUAD;
  const int op = op_code & ~OP_QUAD;
  const int G = quad ? 4 : 32;  // lanes per group
  auto in = [&](int i) -> const T& { return *(const T*)L[i]->cin; };
  auto out = [&](int i) -> T& { return *(T*)L[i]->cout; };
  for (int base = 0; base < n; base += G) {
    int end = base + G < n ? base + G : n;
    int first = -1;
    uint64_t active = 0;
    for (int i = base; i < end; ++i) if (L[i]) { if (first < 0) first = i; active |= 1ull << (i - base); }
    if (first < 0) continue;
    if (op == OP_SUM || op == OP_PRODUCT || op == OP_MAX || op == OP_MIN || op == OP_AND || op == OP_OR || op == OP_XOR) {
      if constexpr (reducible_v<T>) {
        T acc = in(first);
        for (int i = first + 1; i < end; ++i) if (L[i]) acc = reduce(op, acc, in(i));
        for (int i = base; i < end; ++i) if (L[i]) out(i) = acc;
      }
    } else if (op == OP_PREFIX_EXCL_SUM || op == OP_PREFIX_INCL_SUM || op == OP_PREFIX_EXCL_PRODUCT ||
               op == OP_PREFIX_INCL_PRODUCT) {
      if constexpr (reducible_v<T>) {
        bool incl = op == OP_PREFIX_INCL_SUM || op == OP_PREFIX_INCL_PRODUCT;
        T acc = identity<T>(op);
        for (int i = base; i < end; ++i) if (L[i]) {
          T v = in(i);
          if (incl) { acc = reduce(op, acc, v); out(i) = acc; }
          else { out(i) = acc; acc = reduce(op, acc, v); }
        }
      }
    } else if (op == OP_ALL || op == OP_ANY || op == OP_IS_FIRST) {
      if constexpr (std::is_same_v<T, bool>) {
        bool acc = op == OP_ALL;
        for (int i = base; i < end; ++i) if (L[i]) acc = op == OP_ALL ? (acc && in(i)) : (acc || in(i));
        for (int i = base; i < end; ++i) if (L[i]) out(i) = op == OP_IS_FIRST ? i == first : acc;
      }
    } else if (op == OP_BALLOT || op == OP_ACTIVE_MASK) {  // T is fill_pair<ulong>: (vote, active mask)
      if constexpr (std::is_same_v<T, fill_pair<ulong>>) {
        uint64_t v = 0;
        for (int i = base; i < end; ++i) if (L[i] && (op == OP_ACTIVE_MASK || in(i).data)) v |= 1ull << (i - base);
        for (int i = base; i < end; ++i) if (L[i]) { out(i).data = v; out(i).fill = active; }
      }
    } else if (op == OP_BROADCAST_FIRST) {
      for (int i = base; i < end; ++i) if (L[i]) out(i) = in(first);
    } else if (op == OP_FILL_UP || op == OP_FILL_DOWN) {  // T is fill_pair<U>; carg holds delta | modulo << 16
      if constexpr (is_fill_pair<T>::value) {
        for (int i = base; i < end; ++i) if (L[i]) {
          int64_t a = L[i]->carg;
          int delta = (int)(a & 0xffff), m = (int)(a >> 16);
          if (m <= 0 || m > G) m = G;
          int gbase = base + (i - base) / m * m, j = (i - base) % m, src;
          bool from_fill;
          if (op == OP_FILL_UP) { from_fill = j < delta; src = from_fill ? gbase + m - delta + j : i - delta; }
          else { from_fill = j + delta >= m; src = from_fill ? gbase + j + delta - m : i + delta; }
          if (src < base || src >= base + G || src >= n || !L[src]) {
            inactive_read(op_code, L[i]->wfile, L[i]->wline, i - base, src - base, L[i]->sg);
            out(i) = in(i);
          } else {
            out(i).data = from_fill ? in(src).fill : in(src).data;
          }
        }
      }
    } else {  // shuffles and broadcast: a source lane per destination lane
      int64_t b0 = L[first]->carg;
      for (int i = base; i < end; ++i) if (L[i]) {
        int64_t a = L[i]->carg, src;
        if (op == OP_BROADCAST && a != b0)
          fail(E_DIVERGE, "%s_broadcast at %s:%d: lanes of simdgroup %u name different source lanes (%lld and %lld); "
               "the lane must be the same on all threads", quad ? "quad" : "simd", L[i]->wfile, L[i]->wline, L[i]->sg,
               (long long)b0, (long long)a);
        int li = i - base;  // lane within the group
        bool keep = false;  // the specification's "unchanged" lanes of shuffle_up and shuffle_down
        switch (op) {
          case OP_SHUFFLE: case OP_BROADCAST: src = a; break;
          case OP_SHUFFLE_XOR: src = li ^ a; break;
          case OP_SHUFFLE_UP: src = li - a; keep = src < 0; break;
          case OP_SHUFFLE_DOWN: src = li + a; keep = src >= G; break;
          case OP_ROTATE_DOWN: src = (li + a) % G; break;
          case OP_ROTATE_UP: src = ((li - a) % G + G) % G; break;
          default: src = li;
        }
        if (keep) { out(i) = in(i); continue; }
        if (src < 0 || src >= G || base + src >= n || !L[base + src]) {
          inactive_read(op_code, L[i]->wfile, L[i]->wline, li, (int)src, L[i]->sg);
          out(i) = in(i);
        } else {
          out(i) = in(base + src);
        }
      }
    }
  }
}

template <class T> MSLEMU_AI T collect(int op, const T& x, int64_t arg, const char* file, int line) {
  T r = x;
  Fiber* f = ctx.cur;
  f->cin = &x; f->cout = &r; f->carg = arg;
  collective(op, file, line, &combine<T>);
  return r;
}

// the types a simd-group function computes in: bfloat promotes to float (as Metal converts
// it implicitly to call the float function)
template <class V, class = void> struct sres {};
template <class V> struct sres<V, std::enable_if_t<is_arith_v<V> && !std::is_same_v<V, bool> && !std::is_same_v<V, bfloat>>> { using type = V; };
template <> struct sres<bfloat> { using type = float; };
template <class T, int N> struct sres<vec<T, N>, std::enable_if_t<is_arith_v<T> && !std::is_same_v<T, bool> && !std::is_same_v<T, bfloat>>> {
  using type = vec<T, N>;
};
template <class A> using sres_t = typename sres<val_t<A>>::type;
// shuffles move any scalar or vector value
template <class V> inline constexpr bool movable_v = std::is_trivially_copyable_v<V> || is_vec_like<V>::value;
template <class A> using moved_t = std::enable_if_t<movable_v<val_t<A>>, val_t<A>>;
template <class A> using ints_t = std::enable_if_t<is_int_elem_v<sres_t<A>>, sres_t<A>>;

#define MSLEMU_LOC const char* file = __builtin_FILE(), int line = __builtin_LINE()
#define MSLEMU_REDUCE(name, op, R)                                                                           \
  template <class A, class T = R> inline T simd_##name(const A& x, MSLEMU_LOC) { return collect<T>(op, (T)val(x), 0, file, line); } \
  template <class A, class T = R> inline T quad_##name(const A& x, MSLEMU_LOC) { return collect<T>(op | OP_QUAD, (T)val(x), 0, file, line); }
MSLEMU_REDUCE(sum, OP_SUM, sres_t<A>) MSLEMU_REDUCE(product, OP_PRODUCT, sres_t<A>) MSLEMU_REDUCE(max, OP_MAX, sres_t<A>)
MSLEMU_REDUCE(min, OP_MIN, sres_t<A>) MSLEMU_REDUCE(and, OP_AND, ints_t<A>) MSLEMU_REDUCE(or, OP_OR, ints_t<A>)
MSLEMU_REDUCE(xor, OP_XOR, ints_t<A>)
MSLEMU_REDUCE(prefix_exclusive_sum, OP_PREFIX_EXCL_SUM, sres_t<A>) MSLEMU_REDUCE(prefix_inclusive_sum, OP_PREFIX_INCL_SUM, sres_t<A>)
MSLEMU_REDUCE(prefix_exclusive_product, OP_PREFIX_EXCL_PRODUCT, sres_t<A>)
MSLEMU_REDUCE(prefix_inclusive_product, OP_PREFIX_INCL_PRODUCT, sres_t<A>)
MSLEMU_REDUCE(broadcast_first, OP_BROADCAST_FIRST, moved_t<A>)
#undef MSLEMU_REDUCE
#define MSLEMU_MOVE(name, op)                                                                                \
  template <class A, class T = moved_t<A>> inline T simd_##name(const A& x, ushort a, MSLEMU_LOC) {          \
    return collect<T>(op, (T)val(x), a, file, line); }                                                       \
  template <class A, class T = moved_t<A>> inline T quad_##name(const A& x, ushort a, MSLEMU_LOC) {          \
    return collect<T>(op | OP_QUAD, (T)val(x), a, file, line); }
MSLEMU_MOVE(shuffle, OP_SHUFFLE) MSLEMU_MOVE(shuffle_xor, OP_SHUFFLE_XOR) MSLEMU_MOVE(shuffle_up, OP_SHUFFLE_UP)
MSLEMU_MOVE(shuffle_down, OP_SHUFFLE_DOWN) MSLEMU_MOVE(shuffle_rotate_down, OP_ROTATE_DOWN)
MSLEMU_MOVE(shuffle_rotate_up, OP_ROTATE_UP) MSLEMU_MOVE(broadcast, OP_BROADCAST)
#undef MSLEMU_MOVE
// shuffle_and_fill: lanes whose source falls outside their group of `modulo` lanes take
// the fill value of the lane at the other end of the group
#define MSLEMU_FILL(name, op, G)                                                                              \
  template <class A, class B, class T = moved_t<A>>                                                          \
  inline T simd_##name(const A& x, const B& fill, ushort delta, ushort modulo, MSLEMU_LOC) {                 \
    return collect<fill_pair<T>>(op, fill_pair<T>{(T)val(x), (T)val(fill)}, delta | ((int64_t)modulo << 16), file, line).data; } \
  template <class A, class B, class T = moved_t<A>>                                                          \
  inline T simd_##name(const A& x, const B& fill, ushort delta, MSLEMU_LOC) {                                \
    return collect<fill_pair<T>>(op, fill_pair<T>{(T)val(x), (T)val(fill)}, delta | ((int64_t)32 << 16), file, line).data; } \
  template <class A, class B, class T = moved_t<A>>                                                          \
  inline T quad_##name(const A& x, const B& fill, ushort delta, ushort modulo, MSLEMU_LOC) {                 \
    return collect<fill_pair<T>>(op | OP_QUAD, fill_pair<T>{(T)val(x), (T)val(fill)}, delta | ((int64_t)modulo << 16), file, line).data; } \
  template <class A, class B, class T = moved_t<A>>                                                          \
  inline T quad_##name(const A& x, const B& fill, ushort delta, MSLEMU_LOC) {                                \
    return collect<fill_pair<T>>(op | OP_QUAD, fill_pair<T>{(T)val(x), (T)val(fill)}, delta | ((int64_t)4 << 16), file, line).data; }
MSLEMU_FILL(shuffle_and_fill_up, OP_FILL_UP, 32) MSLEMU_FILL(shuffle_and_fill_down, OP_FILL_DOWN, 32)
#undef MSLEMU_FILL

template <class A, class = std::enable_if_t<std::is_convertible_v<val_t<A>, bool>>> inline bool simd_all(const A& x, MSLEMU_LOC) {
  return collect<bool>(OP_ALL, (bool)val(x), 0, file, line); }
template <class A, class = std::enable_if_t<std::is_convertible_v<val_t<A>, bool>>> inline bool simd_any(const A& x, MSLEMU_LOC) {
  return collect<bool>(OP_ANY, (bool)val(x), 0, file, line); }
template <class A, class = std::enable_if_t<std::is_convertible_v<val_t<A>, bool>>> inline bool quad_all(const A& x, MSLEMU_LOC) {
  return collect<bool>(OP_ALL | OP_QUAD, (bool)val(x), 0, file, line); }
template <class A, class = std::enable_if_t<std::is_convertible_v<val_t<A>, bool>>> inline bool quad_any(const A& x, MSLEMU_LOC) {
  return collect<bool>(OP_ANY | OP_QUAD, (bool)val(x), 0, file, line); }
inline bool simd_is_first(MSLEMU_LOC) { return collect<bool>(OP_IS_FIRST, true, 0, file, line); }
inline bool quad_is_first(MSLEMU_LOC) { return collect<bool>(OP_IS_FIRST | OP_QUAD, true, 0, file, line); }
template <class A, class = std::enable_if_t<std::is_convertible_v<val_t<A>, bool>>> inline simd_vote simd_ballot(const A& x, MSLEMU_LOC) {
  auto r = collect<fill_pair<ulong>>(OP_BALLOT, fill_pair<ulong>{(ulong)(bool)val(x), 0}, 0, file, line);
  return simd_vote(r.data, r.fill);
}
template <class A, class = std::enable_if_t<std::is_convertible_v<val_t<A>, bool>>> inline quad_vote quad_ballot(const A& x, MSLEMU_LOC) {
  auto r = collect<fill_pair<ulong>>(OP_BALLOT | OP_QUAD, fill_pair<ulong>{(ulong)(bool)val(x), 0}, 0, file, line);
  return quad_vote((ushort)r.data, (ushort)r.fill);
}
inline simd_vote simd_active_threads_mask(MSLEMU_LOC) {
  auto r = collect<fill_pair<ulong>>(OP_ACTIVE_MASK, fill_pair<ulong>{0, 0}, 0, file, line);
  return simd_vote(r.data, r.fill);
}
inline quad_vote quad_active_threads_mask(MSLEMU_LOC) {
  auto r = collect<fill_pair<ulong>>(OP_ACTIVE_MASK | OP_QUAD, fill_pair<ulong>{0, 0}, 0, file, line);
  return quad_vote((ushort)r.data, (ushort)r.fill);
}
// compute functions have no helper threads (those exist in fragment functions)
inline bool simd_is_helper_thread() { return false; }
inline bool quad_is_helper_thread() { return false; }
#undef MSLEMU_LOC
}  // namespace simd
}  // namespace mslemu

#define MSLEMU_SIMD_NAMES(X) X(sum) X(product) X(max) X(min) X(and) X(or) X(xor) X(prefix_exclusive_sum)      \
  X(prefix_inclusive_sum) X(prefix_exclusive_product) X(prefix_inclusive_product) X(broadcast_first) X(shuffle)  \
  X(shuffle_xor) X(shuffle_up) X(shuffle_down) X(shuffle_rotate_down) X(shuffle_rotate_up) X(broadcast)          \
  X(shuffle_and_fill_up) X(shuffle_and_fill_down) X(all) X(any) X(is_first) X(ballot) X(active_threads_mask)      \
  X(is_helper_thread)
#define MSLEMU_USING_SIMD(name) using ::mslemu::simd::simd_##name; using ::mslemu::simd::quad_##name;
namespace metal { MSLEMU_SIMD_NAMES(MSLEMU_USING_SIMD) }
#undef MSLEMU_USING_SIMD
