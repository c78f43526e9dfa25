// MSL library functions for the shim: math, type traits, barriers, simd-group functions,
// simdgroup_matrix and atomics (original code).
#pragma once

namespace metal {
using std::conditional;
using std::conditional_t;
using std::decay;
using std::decay_t;
using std::enable_if;
using std::enable_if_t;
using std::integral_constant;
using std::is_arithmetic;
using std::is_const;
using std::is_const_v;
using std::is_convertible;
using std::is_convertible_v;
using std::is_floating_point;
using std::is_integral;
using std::is_integral_v;
using std::is_pointer;
using std::is_pointer_v;
using std::is_same;
using std::is_same_v;
using std::is_signed;
using std::is_signed_v;
using std::is_unsigned;
using std::is_unsigned_v;
using std::is_void_v;
using std::make_signed;
using std::make_signed_t;
using std::make_unsigned;
using std::make_unsigned_t;
using std::remove_const;
using std::remove_const_t;
using std::remove_cv;
using std::remove_cv_t;
using std::remove_reference;
using std::remove_reference_t;
using std::true_type;
using std::false_type;
using std::bool_constant;
using std::declval;
template <class T> inline constexpr bool is_floating_point_v = std::is_floating_point_v<T> || mslemu::is_half<std::remove_cv_t<T>>::value;
template <class T> inline constexpr bool is_arithmetic_v = mslemu::is_arith_v<T>;
template <class T> inline constexpr bool is_scalar_v = mslemu::is_arith_v<T>;

template <class T> struct remove_addrspace { using type = T; };
template <class T> using remove_addrspace_t = T;
template <class T> struct numeric_limits : std::numeric_limits<T> {};
template <> struct numeric_limits<mslemu::bfloat> {
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool is_integer = false;
  static constexpr bool has_infinity = true;
  static constexpr int digits = 8;
  static constexpr mslemu::bfloat max() { return mslemu::bfloat(3.38953139e38f); }
  static constexpr mslemu::bfloat min() { return mslemu::bfloat(1.17549435e-38f); }
  static constexpr mslemu::bfloat lowest() { return mslemu::bfloat(-3.38953139e38f); }
  static constexpr mslemu::bfloat epsilon() { return mslemu::bfloat(0.0078125f); }
  static constexpr mslemu::bfloat infinity() { return mslemu::bfloat(__builtin_inff()); }
  static constexpr mslemu::bfloat quiet_NaN() { return mslemu::bfloat(__builtin_nanf("")); }
};
template <> struct numeric_limits<half> {
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool is_integer = false;
  static constexpr bool has_infinity = true;
  static constexpr int digits = 11;
  static constexpr half max() { return (half)65504.0f; }
  static constexpr half min() { return (half)6.103515625e-05f; }
  static constexpr half lowest() { return (half)-65504.0f; }
  static constexpr half epsilon() { return (half)0.0009765625f; }
  static constexpr half infinity() { return (half)__builtin_inff(); }
  static constexpr half quiet_NaN() { return (half)__builtin_nanf(""); }
};

// ---------------------------------------------------------------- math
#define MSLEMU_EW1(name)                                                                       \
  template <class T, int N> MSLEMU_AI vec<T, N> name(const vec<T, N>& v) {                     \
    vec<T, N> r; for (int i = 0; i < N; ++i) r[i] = name(v[i]); return r; }
#define MSLEMU_F1(name, fn)                                                                    \
  MSLEMU_AI float name(float x) { return fn(x); }                                              \
  MSLEMU_AI half name(half x) { return (half)fn((float)x); }                        \
  MSLEMU_AI double name(double x) { return (double)fn((float)x); }                              \
  MSLEMU_EW1(name)
MSLEMU_F1(sqrt, __builtin_sqrtf)
MSLEMU_F1(exp, __builtin_expf)
MSLEMU_F1(exp2, __builtin_exp2f)
MSLEMU_F1(log, __builtin_logf)
MSLEMU_F1(log2, __builtin_log2f)
MSLEMU_F1(log10, __builtin_log10f)
MSLEMU_F1(sin, __builtin_sinf)
MSLEMU_F1(cos, __builtin_cosf)
MSLEMU_F1(tan, __builtin_tanf)
MSLEMU_F1(tanh, __builtin_tanhf)
MSLEMU_F1(sinh, __builtin_sinhf)
MSLEMU_F1(cosh, __builtin_coshf)
MSLEMU_F1(asin, __builtin_asinf)
MSLEMU_F1(acos, __builtin_acosf)
MSLEMU_F1(atan, __builtin_atanf)
MSLEMU_F1(floor, __builtin_floorf)
MSLEMU_F1(ceil, __builtin_ceilf)
MSLEMU_F1(round, __builtin_roundf)
MSLEMU_F1(rint, __builtin_rintf)
MSLEMU_F1(trunc, __builtin_truncf)
MSLEMU_AI float rsqrt(float x) { return 1.0f / __builtin_sqrtf(x); }
MSLEMU_AI half rsqrt(half x) { return (half)(1.0f / __builtin_sqrtf((float)x)); }
MSLEMU_EW1(rsqrt)
MSLEMU_AI float fract(float x) { return x - __builtin_floorf(x); }
MSLEMU_EW1(fract)
MSLEMU_AI float abs(float x) { return __builtin_fabsf(x); }
MSLEMU_AI half abs(half x) { return x < 0 ? (half)-x : x; }
MSLEMU_AI int abs(int x) { return x < 0 ? -x : x; }
MSLEMU_AI long abs(long x) { return x < 0 ? -x : x; }
MSLEMU_AI short abs(short x) { return x < 0 ? -x : x; }
MSLEMU_AI char abs(char x) { return x < 0 ? -x : x; }
MSLEMU_EW1(abs)
MSLEMU_AI float fabs(float x) { return __builtin_fabsf(x); }
MSLEMU_AI half fabs(half x) { return x < 0 ? (half)-x : x; }
MSLEMU_EW1(fabs)
MSLEMU_AI bool isnan(float x) { return __builtin_isnan(x); }
MSLEMU_AI bool isnan(half x) { return __builtin_isnan((float)x); }
MSLEMU_AI bool isinf(float x) { return __builtin_isinf(x); }
MSLEMU_AI bool isinf(half x) { return __builtin_isinf((float)x); }
MSLEMU_AI bool isfinite(float x) { return __builtin_isfinite(x); }
MSLEMU_AI bool signbit(float x) { return __builtin_signbit(x); }
MSLEMU_AI float sign(float x) { return x > 0 ? 1.0f : x < 0 ? -1.0f : 0.0f; }
MSLEMU_AI float pow(float a, float b) { return __builtin_powf(a, b); }
MSLEMU_AI float powr(float a, float b) { return __builtin_powf(a, b); }
MSLEMU_AI float atan2(float a, float b) { return __builtin_atan2f(a, b); }
MSLEMU_AI float fmod(float a, float b) { return __builtin_fmodf(a, b); }
MSLEMU_AI float copysign(float a, float b) { return __builtin_copysignf(a, b); }
MSLEMU_AI float fma(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
MSLEMU_AI half fma(half a, half b, half c) { return (half)__builtin_fmaf((float)a, (float)b, (float)c); }
template <class T, int N> MSLEMU_AI vec<T, N> fma(const vec<T, N>& a, const vec<T, N>& b, const vec<T, N>& c) {
  vec<T, N> r; for (int i = 0; i < N; ++i) r[i] = fma(a[i], b[i], c[i]); return r; }
template <class T, int N> MSLEMU_AI vec<T, N> pow(const vec<T, N>& a, const vec<T, N>& b) {
  vec<T, N> r; for (int i = 0; i < N; ++i) r[i] = pow(a[i], b[i]); return r; }

template <class T, class = std::enable_if_t<mslemu::is_arith_v<T>>> MSLEMU_AI T min(T a, T b) { return b < a ? b : a; }
template <class T, class = std::enable_if_t<mslemu::is_arith_v<T>>> MSLEMU_AI T max(T a, T b) { return a < b ? b : a; }
MSLEMU_AI float fmin(float a, float b) { return __builtin_fminf(a, b); }
MSLEMU_AI float fmax(float a, float b) { return __builtin_fmaxf(a, b); }
template <class A, class B, class = std::enable_if_t<mslemu::is_arith_v<A> && mslemu::is_arith_v<B> && !std::is_same_v<A, B>>, class = void>
MSLEMU_AI auto min(A a, B b) { using C = decltype(a + b); return min((C)a, (C)b); }
template <class A, class B, class = std::enable_if_t<mslemu::is_arith_v<A> && mslemu::is_arith_v<B> && !std::is_same_v<A, B>>, class = void>
MSLEMU_AI auto max(A a, B b) { using C = decltype(a + b); return max((C)a, (C)b); }
template <class T, int N> MSLEMU_AI vec<T, N> min(const vec<T, N>& a, const vec<T, N>& b) { vec<T, N> r; for (int i = 0; i < N; ++i) r[i] = min(a[i], b[i]); return r; }
template <class T, int N> MSLEMU_AI vec<T, N> max(const vec<T, N>& a, const vec<T, N>& b) { vec<T, N> r; for (int i = 0; i < N; ++i) r[i] = max(a[i], b[i]); return r; }
template <class T, int N> MSLEMU_AI vec<T, N> min(const vec<T, N>& a, T b) { return min(a, vec<T, N>(b)); }
template <class T, int N> MSLEMU_AI vec<T, N> max(const vec<T, N>& a, T b) { return max(a, vec<T, N>(b)); }
template <class T, class = std::enable_if_t<mslemu::is_arith_v<T>>> MSLEMU_AI T clamp(T x, T lo, T hi) { return min(max(x, lo), hi); }
template <class T> MSLEMU_AI T min3(T a, T b, T c) { return min(min(a, b), c); }
template <class T> MSLEMU_AI T max3(T a, T b, T c) { return max(max(a, b), c); }
template <class T> MSLEMU_AI T median3(T a, T b, T c) { return max(min(a, b), min(max(a, b), c)); }
template <class T, int N> MSLEMU_AI vec<T, N> clamp(const vec<T, N>& x, const vec<T, N>& lo, const vec<T, N>& hi) { return min(max(x, lo), hi); }
template <class T, int N> MSLEMU_AI vec<T, N> clamp(const vec<T, N>& x, T lo, T hi) { return min(max(x, vec<T, N>(lo)), vec<T, N>(hi)); }
template <class T> MSLEMU_AI T saturate(T x) { return clamp(x, T(0), T(1)); }
template <class T> MSLEMU_AI T mix(T a, T b, T t) { return a + (b - a) * t; }
template <class T, int N> MSLEMU_AI vec<T, N> mix(const vec<T, N>& a, const vec<T, N>& b, T t) { return a + (b - a) * t; }
template <class T> MSLEMU_AI T select(T a, T b, bool c) { return c ? b : a; }
template <class T, int N> MSLEMU_AI vec<T, N> select(const vec<T, N>& a, const vec<T, N>& b, const vec<bool, N>& c) {
  vec<T, N> r; for (int i = 0; i < N; ++i) r[i] = c[i] ? b[i] : a[i]; return r; }
template <class T, int N> MSLEMU_AI T dot(const vec<T, N>& a, const vec<T, N>& b) { T s = 0; for (int i = 0; i < N; ++i) s += a[i] * b[i]; return s; }
template <class T> MSLEMU_AI T step(T edge, T x) { return x < edge ? T(0) : T(1); }
template <class T, int N> MSLEMU_AI T length(const vec<T, N>& a) { return sqrt(dot(a, a)); }
MSLEMU_AI uint popcount(uint x) { return __builtin_popcount(x); }
MSLEMU_AI uint clz(uint x) { return x ? __builtin_clz(x) : 32; }
MSLEMU_AI uint ctz(uint x) { return x ? __builtin_ctz(x) : 32; }
MSLEMU_AI uint mulhi(uint a, uint b) { return (uint)(((uint64_t)a * b) >> 32); }
template <class T> MSLEMU_AI T divide(T a, T b) { return a / b; }

#define MSLEMU_EW2(name)                                                                                  \
  template <class T, int N> MSLEMU_AI vec<T, N> name(const vec<T, N>& a, const vec<T, N>& b) {            \
    vec<T, N> r; for (int i = 0; i < N; ++i) r[i] = name(a[i], b[i]); return r; }
MSLEMU_EW2(atan2) MSLEMU_EW2(fmod) MSLEMU_EW2(copysign) MSLEMU_EW2(fmin) MSLEMU_EW2(fmax) MSLEMU_EW2(powr)
MSLEMU_EW2(step)
#undef MSLEMU_EW2
template <class T, int N> MSLEMU_AI vec<T, N> sign(const vec<T, N>& a) { vec<T, N> r; for (int i = 0; i < N; ++i) r[i] = sign(a[i]); return r; }
template <int N> MSLEMU_AI vec<bool, N> isnan(const vec<float, N>& a) { vec<bool, N> r; for (int i = 0; i < N; ++i) r[i] = isnan(a[i]); return r; }
template <int N> MSLEMU_AI vec<bool, N> isinf(const vec<float, N>& a) { vec<bool, N> r; for (int i = 0; i < N; ++i) r[i] = isinf(a[i]); return r; }
template <class T, int N> MSLEMU_AI vec<T, N> popcount(const vec<T, N>& a) { vec<T, N> r; for (int i = 0; i < N; ++i) r[i] = (T)__builtin_popcountll((unsigned long long)a[i]); return r; }
template <class To, class From> MSLEMU_AI To as_type(const From& f) {
  static_assert(sizeof(To) == sizeof(From), "as_type needs types of one size");
  To t; memcpy((void*)&t, (const void*)&f, sizeof(To)); return t;
}

namespace fast { using namespace ::metal; }
namespace precise { using namespace ::metal; }

// ---------------------------------------------------------------- barriers
enum class mem_flags : unsigned { mem_none = 0, mem_device = 1, mem_threadgroup = 2, mem_texture = 4,
                                  mem_threadgroup_imageblock = 8, mem_object_data = 16 };
MSLEMU_AI mem_flags operator|(mem_flags a, mem_flags b) { return (mem_flags)((unsigned)a | (unsigned)b); }
MSLEMU_AI mem_flags operator&(mem_flags a, mem_flags b) { return (mem_flags)((unsigned)a & (unsigned)b); }
inline void threadgroup_barrier(mem_flags f, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  mslemu::barrier((int)f, file, line);
}
inline void simdgroup_barrier(mem_flags f, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  (void)f; mslemu::simd_barrier(file, line);
}

// ---------------------------------------------------------------- simd-group functions
enum { OP_SUM = 1, OP_PRODUCT, OP_MAX, OP_MIN, OP_SHUFFLE, OP_SHUFFLE_XOR, OP_SHUFFLE_UP, OP_SHUFFLE_DOWN,
       OP_BROADCAST, OP_BROADCAST_FIRST, OP_PREFIX_EXCL_SUM, OP_PREFIX_INCL_SUM, OP_ALL, OP_ANY, OP_MMA,
       OP_AND, OP_OR, OP_XOR, OP_ROTATE_DOWN, OP_ROTATE_UP, OP_IS_FIRST };

template <class T> void combine(int op, mslemu::Fiber** L, int n) {
  auto in = [&](int i) -> const T& { return *(const T*)L[i]->cin; };
  auto out = [&](int i) -> T& { return *(T*)L[i]->cout; };
  int first = -1;
  for (int i = 0; i < n; ++i) if (L[i]) { first = i; break; }
  constexpr bool arith = mslemu::is_arith_v<T>;
  constexpr bool reducible = arith || mslemu::vecinfo<T>::n > 1;
  switch (op) {
    case OP_SUM: case OP_PRODUCT: case OP_MAX: case OP_MIN: case OP_AND: case OP_OR: case OP_XOR: if constexpr (reducible) {
      T acc = in(first);
      for (int i = first + 1; i < n; ++i) if (L[i]) {
        const T& v = in(i);
        if (op == OP_SUM) acc = acc + v;
        else if (op == OP_PRODUCT) acc = acc * v;
        else if (op == OP_MAX) acc = max(acc, v);
        else if (op == OP_MIN) acc = min(acc, v);
        else if constexpr (std::is_integral_v<T>) {
          if (op == OP_AND) acc = acc & v; else if (op == OP_OR) acc = acc | v; else acc = acc ^ v;
        }
      }
      for (int i = 0; i < n; ++i) if (L[i]) out(i) = acc;
      break;
    }
    case OP_ALL: case OP_ANY: if constexpr (arith) {
      bool acc = op == OP_ALL;
      for (int i = 0; i < n; ++i) if (L[i]) { bool b = (bool)in(i); acc = op == OP_ALL ? (acc && b) : (acc || b); }
      for (int i = 0; i < n; ++i) if (L[i]) out(i) = (T)acc;
      break;
    }
    case OP_PREFIX_EXCL_SUM: case OP_PREFIX_INCL_SUM: if constexpr (reducible) {
      T acc = T(0);
      for (int i = 0; i < n; ++i) if (L[i]) {
        T v = in(i);
        if (op == OP_PREFIX_INCL_SUM) { acc = acc + v; out(i) = acc; } else { out(i) = acc; acc = acc + v; }
      }
      break;
    }
    case OP_BROADCAST_FIRST: {
      for (int i = 0; i < n; ++i) if (L[i]) out(i) = in(first);
      break;
    }
    default: {  // shuffles and broadcast: source lane per destination lane
      int64_t b0 = L[first]->carg;
      for (int i = 0; i < n; ++i) if (L[i]) {
        int64_t a = L[i]->carg, src;
        if (op == OP_BROADCAST && a != b0)
          mslemu::fail(mslemu::E_DIVERGE, "simd_broadcast: lanes of simdgroup %u name different source lanes (%lld and %lld); the lane must be the same on all threads",
                       L[i]->sg, (long long)b0, (long long)a);
        switch (op) {
          case OP_SHUFFLE: case OP_BROADCAST: src = a; break;
          case OP_SHUFFLE_XOR: src = i ^ a; break;
          case OP_SHUFFLE_UP: src = i - a; break;
          case OP_SHUFFLE_DOWN: src = i + a; break;
          case OP_ROTATE_DOWN: src = (i + a) % 32; break;
          case OP_ROTATE_UP: src = ((i - a) % 32 + 32) % 32; break;
          default: src = i;
        }
        if (src < 0 || src >= n || !L[src]) src = i;  // no wrap / inactive source: own value
        out(i) = in(src);
      }
    }
  }
}

template <class T> MSLEMU_AI T simd_op_(int op, const T& x, int64_t arg, const char* file, int line) {
  T r = x;
  mslemu::Fiber* f = mslemu::ctx.cur;
  f->cin = &x; f->cout = &r; f->carg = arg;
  mslemu::collective(op, file, line, &combine<T>);
  return r;
}
#define MSLEMU_SIMD1(name, op) \
  template <class T> inline T name(T x, const char* file = __builtin_FILE(), int line = __builtin_LINE()) { return simd_op_<T>(op, x, 0, file, line); }
#define MSLEMU_SIMD2(name, op) \
  template <class T> inline T name(T x, ushort a, const char* file = __builtin_FILE(), int line = __builtin_LINE()) { return simd_op_<T>(op, x, a, file, line); }
MSLEMU_SIMD1(simd_sum, OP_SUM)
MSLEMU_SIMD1(simd_product, OP_PRODUCT)
MSLEMU_SIMD1(simd_max, OP_MAX)
MSLEMU_SIMD1(simd_min, OP_MIN)
MSLEMU_SIMD1(simd_and, OP_AND)
MSLEMU_SIMD1(simd_or, OP_OR)
MSLEMU_SIMD1(simd_xor, OP_XOR)
MSLEMU_SIMD1(simd_prefix_exclusive_sum, OP_PREFIX_EXCL_SUM)
MSLEMU_SIMD1(simd_prefix_inclusive_sum, OP_PREFIX_INCL_SUM)
MSLEMU_SIMD1(simd_broadcast_first, OP_BROADCAST_FIRST)
MSLEMU_SIMD2(simd_shuffle, OP_SHUFFLE)
MSLEMU_SIMD2(simd_shuffle_xor, OP_SHUFFLE_XOR)
MSLEMU_SIMD2(simd_shuffle_up, OP_SHUFFLE_UP)
MSLEMU_SIMD2(simd_shuffle_down, OP_SHUFFLE_DOWN)
MSLEMU_SIMD2(simd_shuffle_rotate_down, OP_ROTATE_DOWN)
MSLEMU_SIMD2(simd_shuffle_rotate_up, OP_ROTATE_UP)
MSLEMU_SIMD2(simd_broadcast, OP_BROADCAST)
template <class T> inline T simd_shuffle_and_fill_up(T x, T fill, ushort delta, ushort modulo = 32, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  T up = simd_shuffle_up(x, delta, file, line);
  return (mslemu::ctx.cur->lane % modulo) < delta ? fill : up; }
template <class T> inline T simd_shuffle_and_fill_down(T x, T fill, ushort delta, ushort modulo = 32, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  T dn = simd_shuffle_down(x, delta, file, line);
  return (mslemu::ctx.cur->lane % modulo) + delta >= modulo ? fill : dn; }
inline bool simd_all(bool x, const char* file = __builtin_FILE(), int line = __builtin_LINE()) { return simd_op_<bool>(OP_ALL, x, 0, file, line); }
inline bool simd_any(bool x, const char* file = __builtin_FILE(), int line = __builtin_LINE()) { return simd_op_<bool>(OP_ANY, x, 0, file, line); }
inline bool simd_is_first(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  uint lane = mslemu::ctx.cur->lane; return simd_op_<uint>(OP_BROADCAST_FIRST, lane, 0, file, line) == lane; }

// ---------------------------------------------------------------- simdgroup_matrix
template <class T> constexpr uint8_t elem_tag_() {
  if constexpr (std::is_same_v<T, half>) return 1;
  else if constexpr (std::is_same_v<T, mslemu::bfloat>) return 2;
  else return 0;
}
template <class T, int Cols, int Rows> struct simdgroup_matrix {
  static_assert(Cols == 8 && Rows == 8, "only 8x8 simdgroup matrices exist");
  vec<T, 2> e;
  int32_t pend = -1;  // >= 0: the value is the result of this lane's queued multiply #pend
  MSLEMU_AI static int row() { uint l = mslemu::ctx.cur->lane; uint q = l / 4; return (q & 4) + (l / 2) % 4; }
  MSLEMU_AI static int col() { uint l = mslemu::ctx.cur->lane; uint q = l / 4; return (q & 2) * 2 + (l % 2) * 2; }
  simdgroup_matrix() = default;
  // the scalar constructor makes a DIAGONAL matrix
  MSLEMU_AI explicit simdgroup_matrix(T d) {
    int r = row(), c = col();
    e[0] = r == c ? d : T(0);
    e[1] = r == c + 1 ? d : T(0);
  }
  MSLEMU_AI void materialize(const char* file = nullptr, int line = 0) const {
    if (pend >= 0) mslemu::mma_flush(file, line);
  }
  MSLEMU_AI void cancel() {
    if (pend >= 0) {
      mslemu::Fiber* f = mslemu::ctx.cur;
      mslemu::LaneOp& op = mslemu::qop(f->sg, pend, f->lane);
      op.reg_e = nullptr; op.reg_pend = nullptr;
      pend = -1;
    }
  }
  MSLEMU_AI simdgroup_matrix(const simdgroup_matrix& o) : pend(-1) { o.materialize(); e = o.e; }
  MSLEMU_AI simdgroup_matrix& operator=(const simdgroup_matrix& o) {
    if (this == &o) return *this;
    o.materialize();
    cancel();
    e = o.e;
    return *this;
  }
  MSLEMU_AI ~simdgroup_matrix() { if (pend >= 0) cancel(); }
  MSLEMU_AI vec<T, 2>& thread_elements(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
    materialize(file, line); return e; }
  MSLEMU_AI const vec<T, 2>& thread_elements(const char* file = __builtin_FILE(), int line = __builtin_LINE()) const {
    materialize(file, line); return e; }
};
template <class T, int C, int R> MSLEMU_AI simdgroup_matrix<T, C, R> make_filled_simdgroup_matrix(T v) {
  simdgroup_matrix<T, C, R> m; m.e[0] = v; m.e[1] = v; m.pend = -1; return m; }
typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;
typedef simdgroup_matrix<mslemu::bfloat, 8, 8> simdgroup_bfloat8x8;

template <class P> MSLEMU_AI auto rd_(const P& p, ptrdiff_t i) { return p[i]; }

template <class T, int C, int R, class P>
MSLEMU_AI void simdgroup_load(simdgroup_matrix<T, C, R>& m, const P& src, size_t elements_per_row = C,
                              vec<ulong, 2> origin = vec<ulong, 2>(0), bool transpose = false) {
  m.cancel();
  int r = m.row(), c = m.col();
  for (int k = 0; k < 2; ++k) {
    size_t rr = transpose ? c + k : r, cc = transpose ? r : c + k;
    ptrdiff_t idx = (ptrdiff_t)((origin[1] + rr) * elements_per_row + origin[0] + cc);
    m.e[k] = (T)src[idx];
  }
}
template <class T, int C, int R, class P>
MSLEMU_AI void simdgroup_store(const simdgroup_matrix<T, C, R>& m, const P& dst, size_t elements_per_row = C,
                               vec<ulong, 2> origin = vec<ulong, 2>(0), bool transpose = false,
                               const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  m.materialize(file, line);
  int r = m.row(), c = m.col();
  for (int k = 0; k < 2; ++k) {
    size_t rr = transpose ? c + k : r, cc = transpose ? r : c + k;
    ptrdiff_t idx = (ptrdiff_t)((origin[1] + rr) * elements_per_row + origin[0] + cc);
    dst[idx] = m.e[k];
  }
}

template <class TD, class TA, class TB, class TC, int C, int R>
MSLEMU_AI void mma_(simdgroup_matrix<TD, C, R>& d, const simdgroup_matrix<TA, C, R>& a,
                    const simdgroup_matrix<TB, C, R>& b, const simdgroup_matrix<TC, C, R>* c,
                    const char* file, int line) {
  mslemu::Fiber* f = mslemu::ctx.cur;
  if (f->nq == mslemu::MMA_QCAP) mslemu::mma_flush(file, line);
  int q = f->nq++;
  mslemu::LaneOp& op = mslemu::qop(f->sg, q, f->lane);
  if (a.pend >= 0) op.dep[0] = (int8_t)a.pend; else { op.dep[0] = -1; op.in[0] = (float)a.e[0]; op.in[1] = (float)a.e[1]; }
  if (b.pend >= 0) op.dep[1] = (int8_t)b.pend; else { op.dep[1] = -1; op.in[2] = (float)b.e[0]; op.in[3] = (float)b.e[1]; }
  if (c && c->pend >= 0) op.dep[2] = (int8_t)c->pend;
  else {
    op.dep[2] = -1;
    op.in[4] = c ? (float)c->e[0] : 0.0f; op.in[5] = c ? (float)c->e[1] : 0.0f;
  }
  op.td = elem_tag_<TD>();
  op.file = file; op.line = line;
  f->qhash = (f->qhash ^ (uint64_t)(uintptr_t)file ^ ((uint64_t)(uint32_t)line << 20) ^
              ((uint64_t)(uint8_t)op.dep[0] << 40) ^ ((uint64_t)(uint8_t)op.dep[1] << 48) ^
              ((uint64_t)(uint8_t)op.dep[2] << 56) ^ op.td) * 0x100000001b3ull;
  d.cancel();
  d.pend = q;
  op.reg_e = (void*)&d.e; op.reg_pend = &d.pend;
}
template <class TD, class TA, class TB, class TC, int C, int R>
inline void simdgroup_multiply_accumulate(simdgroup_matrix<TD, C, R>& d, const simdgroup_matrix<TA, C, R>& a,
                                          const simdgroup_matrix<TB, C, R>& b, const simdgroup_matrix<TC, C, R>& c,
                                          const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  mma_(d, a, b, &c, file, line);
}
template <class TD, class TA, class TB, int C, int R>
inline void simdgroup_multiply(simdgroup_matrix<TD, C, R>& d, const simdgroup_matrix<TA, C, R>& a,
                               const simdgroup_matrix<TB, C, R>& b,
                               const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  mma_<TD, TA, TB, TD, C, R>(d, a, b, nullptr, file, line);
}

// ---------------------------------------------------------------- atomics
enum memory_order { memory_order_relaxed, memory_order_acquire, memory_order_release, memory_order_acq_rel, memory_order_seq_cst };
template <class T> struct atomic { T v; };
typedef atomic<int> atomic_int;
typedef atomic<uint> atomic_uint;
typedef atomic<float> atomic_float;
typedef atomic<bool> atomic_bool;
template <class P> MSLEMU_AI auto* atom_raw_(const P& p) {
  if constexpr (mslemu::is_ptr<P>::value) return p.check(mslemu::here()); else return p;
}
// Device memory is shared by the worker processes, so atomics are real atomics.
template <class T, class F> MSLEMU_AI T atomic_rmw_(T* v, F f) {
  if constexpr (std::is_integral_v<T> && sizeof(T) >= 4) {
    T old = __atomic_load_n(v, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(v, &old, f(old), true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {}
    return old;
  } else if constexpr (sizeof(T) == 4) {
    uint32_t* u = (uint32_t*)v;
    uint32_t ob = __atomic_load_n(u, __ATOMIC_RELAXED);
    for (;;) {
      T o; memcpy(&o, &ob, 4);
      T n = f(o);
      uint32_t nb; memcpy(&nb, &n, 4);
      if (__atomic_compare_exchange_n(u, &ob, nb, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) return o;
    }
  } else {
    T o = *v; *v = f(o); return o;
  }
}
#define MSLEMU_AT(name, expr) \
  template <class P, class U> MSLEMU_AI auto name(const P& p, U val, memory_order = memory_order_relaxed) { \
    auto* a = atom_raw_(p); using T = decltype(a->v); T x = (T)val; (void)x; \
    return atomic_rmw_(&a->v, [&](T old) -> T { return (T)(expr); }); }
MSLEMU_AT(atomic_fetch_add_explicit, old + x)
MSLEMU_AT(atomic_fetch_sub_explicit, old - x)
MSLEMU_AT(atomic_fetch_max_explicit, old < x ? x : old)
MSLEMU_AT(atomic_fetch_min_explicit, x < old ? x : old)
MSLEMU_AT(atomic_fetch_and_explicit, old & x)
MSLEMU_AT(atomic_fetch_or_explicit, old | x)
MSLEMU_AT(atomic_fetch_xor_explicit, old ^ x)
MSLEMU_AT(atomic_exchange_explicit, x)
#undef MSLEMU_AT
template <class P> MSLEMU_AI auto atomic_load_explicit(const P& p, memory_order = memory_order_relaxed) {
  auto* a = atom_raw_(p); using T = decltype(a->v); T r; __atomic_load(&a->v, &r, __ATOMIC_SEQ_CST); return r; }
template <class P, class U> MSLEMU_AI void atomic_store_explicit(const P& p, U v, memory_order = memory_order_relaxed) {
  auto* a = atom_raw_(p); using T = decltype(a->v); T x = (T)v; __atomic_store(&a->v, &x, __ATOMIC_SEQ_CST); }
template <class P, class E, class U>
MSLEMU_AI bool atomic_compare_exchange_weak_explicit(const P& p, E* expected, U desired, memory_order = memory_order_relaxed, memory_order = memory_order_relaxed) {
  auto* a = atom_raw_(p); using T = decltype(a->v); T d = (T)desired; T e = (T)*expected;
  bool ok = __atomic_compare_exchange(&a->v, &e, &d, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  *expected = (E)e; return ok;
}
}  // namespace metal

#define FLT_MAX 3.40282347e+38f
#define FLT_MIN 1.17549435e-38f
#define FLT_EPSILON 1.1920929e-07f
#define MAXFLOAT 3.40282347e+38f
#define HUGE_VALF __builtin_huge_valf()
#define INFINITY __builtin_inff()
#define NAN __builtin_nanf("")
#define M_PI_F 3.14159265358979323846f
#define M_E_F 2.71828182845904523536f
#define M_LN2_F 0.69314718055994530942f
#define M_LOG2E_F 1.44269504088896340736f
#define HALF_MAX ((half)65504.0f)
#define DBL_MAX 1.7976931348623157e+308
#define INT_MAX 2147483647
#define UINT_MAX 4294967295u
