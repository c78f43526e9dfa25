// Constructs of real Metal code that the emulator once failed on, one small kernel each;
// every kernel is written so that a wrong emulation gives a wrong number
// (tests/emulator/test_constructs.py checks them against numpy or exact values).
#include <metal_stdlib>
#include <metal_uniform>
using namespace metal;

// <metal_uniform>: uniform<T> values, made with make_uniform, in arithmetic and loop bounds
kernel void uniform_values(device const int* n [[buffer(0)]],
                           device int* out [[buffer(1)]],
                           uint i [[thread_position_in_grid]]) {
  constexpr const uniform<int> stride = make_uniform(4);
  const uniform<int> size = make_uniform(n[0]);
  const uniform<int> iters = size / stride;
  const uniform<int> leftover = size - stride * iters;
  int acc = 0;
  for (int k = 0; k < iters; ++k) acc += k;
  const uniform<float2> v = make_uniform(float2(1.5f, 2.5f));
  float2 w = v * 2.0f;
  out[i * 4 + 0] = iters;
  out[i * 4 + 1] = leftover;
  out[i * 4 + 2] = acc;
  out[i * 4 + 3] = int(w.x + w.y) + int(i);
}

// the quad-group functions: each group of four lanes combines on its own
kernel void quad_fns(device const int* vi [[buffer(0)]],
                     device float* out [[buffer(1)]],
                     uint t [[thread_index_in_threadgroup]],
                     uint q [[thread_index_in_quadgroup]]) {
  int v = vi[t];
  float f = float(v);
  device float* o = out + t * 24;
  o[0] = quad_sum(f);
  o[1] = quad_product(f);
  o[2] = quad_max(f);
  o[3] = quad_min(f);
  o[4] = float(quad_and(v));
  o[5] = float(quad_or(v));
  o[6] = float(quad_xor(v));
  o[7] = quad_prefix_exclusive_sum(f);
  o[8] = quad_prefix_inclusive_sum(f);
  o[9] = quad_prefix_exclusive_product(f);
  o[10] = quad_prefix_inclusive_product(f);
  o[11] = quad_shuffle(f, (q + 1) % 4);
  o[12] = quad_shuffle_xor(f, 3);
  o[13] = quad_shuffle_up(f, 1);
  o[14] = quad_shuffle_down(f, 2);
  o[15] = quad_shuffle_rotate_up(f, 1);
  o[16] = quad_shuffle_rotate_down(f, 3);
  o[17] = quad_broadcast(f, 2);
  o[18] = quad_broadcast_first(f);
  o[19] = quad_all(v > 1) ? 1.0f : 0.0f;
  o[20] = quad_any(v > 2) ? 1.0f : 0.0f;
  o[21] = float(ushort(quad_ballot(v > 1)));
  o[22] = quad_shuffle_and_fill_up(f, -f, 1);
  o[23] = quad_shuffle_and_fill_down(f, -f, 1, 2);
}

// the same over the active lanes only: the last lane of every quad has returned
kernel void quad_active(device const int* vi [[buffer(0)]],
                        device float* out [[buffer(1)]],
                        uint t [[thread_index_in_threadgroup]]) {
  if (t % 4 == 3) return;
  float f = float(vi[t]);
  device float* o = out + t * 8;
  o[0] = quad_sum(f);
  o[1] = quad_prefix_inclusive_sum(f);
  o[2] = quad_prefix_exclusive_product(f);
  o[3] = quad_all(f > 1.0f) ? 1.0f : 0.0f;
  o[4] = float(ushort(quad_ballot(f > 1.0f)));
  o[5] = float(ushort(quad_active_threads_mask()));
  o[6] = quad_is_first() ? 1.0f : 0.0f;
  o[7] = quad_broadcast_first(f);
}

// simd-group and quad-group functions take threadgroup array elements (scalars and vectors)
kernel void simd_on_threadgroup(device const float* in [[buffer(0)]],
                                device float* out [[buffer(1)]],
                                uint t [[thread_index_in_threadgroup]]) {
  threadgroup float s[32];
  threadgroup float2 v[32];
  s[t] = in[t];
  v[t] = float2(in[t], -in[t]);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  device float* o = out + t * 10;
  o[0] = simd_sum(s[t]);
  o[1] = simd_max(s[t]);
  o[2] = quad_sum(s[t]);
  o[3] = simd_shuffle(s[t], (t + 3) % 32);
  o[4] = simd_prefix_exclusive_product(s[t]);
  o[5] = simd_prefix_inclusive_product(s[t]);
  float2 b = simd_broadcast(v[t], 5);
  o[6] = b.x;
  o[7] = b.y;
  o[8] = simd_shuffle_down(v[t], 1).y;
  o[9] = float(ulong(simd_ballot(s[t] > 1.0f)) & 0xffu);
}

// a header that adds bfloat overloads to metal, metal::fast and metal::precise (as MLX's
// bf16_math.h does) must not capture calls with float or half arguments
namespace metal {
inline bfloat exp(bfloat) { return bfloat(42.0f); }
namespace fast {
inline bfloat exp(bfloat) { return bfloat(43.0f); }
inline bfloat sqrt(bfloat) { return bfloat(44.0f); }
}  // namespace fast
namespace precise {
inline bfloat exp(bfloat) { return bfloat(45.0f); }
inline bfloat sin(bfloat) { return bfloat(46.0f); }
}  // namespace precise
}  // namespace metal

kernel void fast_precise(device const float* in [[buffer(0)]],
                         device float* out [[buffer(1)]],
                         uint i [[thread_position_in_grid]]) {
  float x = in[i];
  half h = half(x);
  device float* o = out + i * 9;
  o[0] = metal::fast::exp(x);
  o[1] = fast::sqrt(x);
  o[2] = metal::precise::exp(x);
  o[3] = precise::sin(x);
  o[4] = float(metal::fast::exp(h));
  o[5] = metal::exp(x);
  o[6] = float(metal::fast::exp(bfloat(x)));
  o[7] = float(metal::precise::sin(bfloat(x)));
  o[8] = float(metal::exp(bfloat(x)));
}

// Metal's internal type traits, as MLX's atomic.h uses them
#pragma METAL internals : enable
template <typename T>
constexpr constant bool is_native_atomic = _disjunction<is_same<T, int>, is_same<T, uint>, is_same<T, float>>::value;
template <typename T>
constexpr constant bool is_not_native = _negation<_disjunction<is_same<T, int>, is_same<T, uint>>>::value &&
                                        _conjunction<is_arithmetic<T>, is_signed<T>>::value;
#pragma METAL internals : disable

template <typename T, enable_if_t<is_native_atomic<T>, bool> = true> int atomic_kind() { return 1; }
template <typename T, enable_if_t<!is_native_atomic<T>, bool> = true> int atomic_kind() { return 2; }

kernel void internal_traits(device int* out [[buffer(0)]]) {
  out[0] = atomic_kind<int>();
  out[1] = atomic_kind<float>();
  out[2] = atomic_kind<half>();
  out[3] = atomic_kind<short>();
  out[4] = is_not_native<short> ? 1 : 0;
  out[5] = is_not_native<uint> ? 1 : 0;
}

// a kernel template whose parameter list ends in '>>' (one token to the lexer)
template <typename T, typename V = vec<T, 2>>
[[kernel]] void angle_close(device T* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  V v = V(T(i), T(2 * i));
  out[i] = v.x + v.y;
}
template [[host_name("angle_close_float")]] [[kernel]] decltype(angle_close<float>) angle_close<float>;

// instantiations through a typedef of the kernel's type, and with the full signature
template <int N>
kernel void scaled(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) { out[i] = N * float(i); }
typedef decltype(scaled<1>) scaled_t;
template [[host_name("scaled_4")]] kernel scaled_t scaled<4>;
template [[host_name("scaled_5")]] kernel void scaled<5>(device float*, uint);

// a function-scope threadgroup array where a pointer is expected, next to a null pointer
inline float sum_or_default(threadgroup float* p, int n) {
  if (p == nullptr) return -1.0f;
  float s = 0.0f;
  for (int k = 0; k < n; ++k) s += p[k];
  return s;
}
kernel void array_as_pointer(device float* out [[buffer(0)]],
                             constant int& use [[buffer(1)]],
                             uint t [[thread_index_in_threadgroup]]) {
  threadgroup float tgp_memory[8];
  tgp_memory[t] = float(t + 1);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[t] = sum_or_default(use == 0 ? nullptr : tgp_memory, 8);
  threadgroup float* q = use != 0 ? tgp_memory : nullptr;
  out[8 + t] = q ? q[7 - t] : -2.0f;
}

// matrix types: constructors, columns, + - *, transpose, determinant
kernel void matrices(device const float* in [[buffer(0)]],
                     device float* out [[buffer(1)]]) {
  float3x2 a(in[0], in[1], in[2], in[3], in[4], in[5]);   // 3 columns of float2
  float2x3 b(float3(in[6], in[7], in[8]), float3(in[9], in[10], in[11]));
  float2x2 ab = a * b;                                     // (2x3) . (3x2) -> 2x2
  float3 v = float3(1.0f, -2.0f, 0.5f);
  float2 av = a * v;                                       // matrix . column vector
  float3 wa = float2(3.0f, -1.0f) * a;                     // row vector . matrix
  float2x2 d(2.5f);                                        // diagonal
  float2x2 e = ab + d - 2.0f * ab * 0.25f;
  float2x3 t = transpose(a);
  half2x2 h = half2x2(half2(1.5h, 2.0h), half2(-1.0h, 4.0h));
  half2 hv = h * half2(2.0h, 1.0h);
  int k = 0;
  for (int c = 0; c < 2; ++c) for (int r = 0; r < 2; ++r) out[k++] = ab[c][r];
  out[k++] = av.x; out[k++] = av.y;
  out[k++] = wa.x; out[k++] = wa.y; out[k++] = wa.z;
  for (int c = 0; c < 2; ++c) for (int r = 0; r < 2; ++r) out[k++] = e[c][r];
  for (int c = 0; c < 2; ++c) for (int r = 0; r < 3; ++r) out[k++] = t[c][r];
  out[k++] = determinant(ab);
  out[k++] = float(hv.x); out[k++] = float(hv.y);
  float4x4 m4(float4(2, 1, 0, 0), float4(0, 3, 1, 0), float4(1, 0, 4, 0), float4(0, 0, 0, 5));
  out[k++] = determinant(m4);
  float3x3 m3(1.0f);
  m3[1] = float3(7, 8, 9);
  out[k++] = m3[1][2] + m3[2][2];
}

// an explicit specialization declared inside its class (as MLX's binary_ops.h does)
struct Pick {
  template <typename T> T operator()(T x, T y) thread { return x < y ? x : y; }
  template <> int operator()(int x, int y) thread { return x > y ? x : y; }
  template <typename T> T twice(T x) { return x + x; }
  template <> float twice(float x) { return 4.0f * x; }
};
template <typename U>
struct Init {  // inside a class template too (MLX's reduction/ops.h)
  template <typename T> T operator()(T x) { return x + U(1); }
  template <> float operator()(float x) { return x * 10.0f; }
};
kernel void member_specialization(device float* out [[buffer(0)]]) {
  Pick p;
  out[0] = p(2.0f, 3.0f);
  out[1] = float(p(2, 3));
  out[2] = float(p.twice(short(5)));
  out[3] = p.twice(5.0f);
  Init<int> init;
  out[4] = float(init(3));
  out[5] = init(3.0f);
}

// stores through a vector-typed threadgroup pointer are writes
kernel void vector_stores(device const float* in [[buffer(0)]],
                          device float* out [[buffer(1)]],
                          uint t [[thread_index_in_threadgroup]]) {
  threadgroup float tile[64];
  threadgroup float4* tile4 = reinterpret_cast<threadgroup float4*>(tile);
  tile4[t] = float4(in[4 * t], in[4 * t + 1], in[4 * t + 2], in[4 * t + 3]);
  tile4[t].y += 100.0f;                 // a component, read and written
  threadgroup_barrier(mem_flags::mem_threadgroup);
  auto copy = tile4[(t + 1) % 16];      // a copy, as in Metal
  threadgroup_barrier(mem_flags::mem_threadgroup);
  tile4[(t + 1) % 16].zw = float2(-1.0f);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (int k = 0; k < 4; ++k) out[4 * t + k] = tile[4 * t + k] + copy[k] * 1000.0f;
}

// a race through such a store: thread 1 reads what thread 0 stored, with no barrier
kernel void vector_store_race(device float* out [[buffer(0)]],
                              uint t [[thread_index_in_threadgroup]]) {
  threadgroup float tile[8];
  if (t == 0) reinterpret_cast<threadgroup float4*>(tile)[1] = float4(1.0f);
  if (t == 1) out[0] = tile[5];
}

// threadgroup elements passed to templates deduce their value type (MLX's reductions:
// `op(total, shared_vals[i])`, and simd_reduce overloads chosen by sizeof(T))
struct MinOp {
  template <typename T> T operator()(T a, T b) thread { return a < b ? a : b; }
};
template <typename T, enable_if_t<sizeof(T) < 8, bool> = true> float width_of(T) { return 4.0f; }
template <typename T, enable_if_t<sizeof(T) == 8, bool> = true> float width_of(T) { return 8.0f; }
kernel void elements_to_templates(device const float* in [[buffer(0)]],
                                  device float* out [[buffer(1)]],
                                  uint t [[thread_index_in_threadgroup]]) {
  threadgroup float shared_vals[16];
  shared_vals[t] = in[t];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  MinOp op;
  float total = 100.0f;
  for (int i = 0; i < 16; ++i) total = op(total, shared_vals[i]);
  threadgroup float* p = shared_vals + t;
  out[t * 3 + 0] = total;
  out[t * 3 + 1] = width_of(shared_vals[t]);
  out[t * 3 + 2] = op(*p, 50.0f);
}

// member functions qualified by address space (MLX's _NoMask, complex_t), and an address
// space inside a template argument list
struct NoMask {
  char unused;
  constexpr METAL_FUNC operator bool() thread { return true; }
  constexpr METAL_FUNC operator bool() const thread { return true; }
  constexpr METAL_FUNC operator bool() const threadgroup { return true; }
  constexpr METAL_FUNC operator bool() const device { return true; }
  constexpr METAL_FUNC operator bool() const constant { return true; }
};
struct Scaled {
  float a;
  float get() const device;
  float get() const thread { return a * 2.0f; }
};
template <class T, class U> struct pair_of { T a; U b; };
kernel void address_space_members(const device NoMask* m [[buffer(0)]],
                                  const device Scaled* s [[buffer(1)]],
                                  device float* out [[buffer(2)]]) {
  out[0] = bool(m[0]) ? 1.0f : 0.0f;
  out[1] = s[0].get();
  using tg_pair = pair_of<threadgroup float, int>;
  out[2] = float(sizeof(tg_pair));
}

// the shim's own names stay out of the kernel's way (`Op` and OP_SUM are common in kernels)
template <typename U> struct Op { U operator()(U a, U b) thread { return a + b; } };
enum { OP_SUM = 7, OP_MAX = 9 };
kernel void common_names(device float* out [[buffer(0)]]) {
  Op<float> op;
  out[0] = op(1.0f, float(OP_SUM + OP_MAX));
}

// neighbouring bytes of threadgroup memory written by different threads with no barrier
// between them: not a race (a GPU stores bytes), as in MLX's scan of bool, where the last
// lane of each simdgroup writes its own bool of `threadgroup bool simdgroup_sums[32]`
kernel void byte_neighbours(device const uchar* in [[buffer(0)]],
                            device uchar* out [[buffer(1)]],
                            uint t [[thread_index_in_threadgroup]]) {
  threadgroup bool flags[16];
  threadgroup uchar bytes[16];
  flags[t] = in[t] > 1;
  bytes[t] = in[t] + 1;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[t] = (flags[(t + 1) % 16] ? 100 : 0) + bytes[(t + 1) % 16];
}

// the same byte written by two threads with no barrier: a race
kernel void byte_race(device uchar* out [[buffer(0)]],
                      uint t [[thread_index_in_threadgroup]]) {
  threadgroup uchar bytes[4];
  bytes[t / 2] = uchar(t);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[t] = bytes[t / 2];
}

// members of threadgroup objects: `.` on an element of a threadgroup array of structs, on a
// threadgroup struct, `->` on a threadgroup pointer, nested members, an array member, a
// member function (MLX's arg reductions keep `threadgroup IndexValPair<U> local_data[32]`)
template <typename T> struct IndexVal { uint index; T val; };
struct Inner { float a; float2 b; };
struct Rec {
  uchar lo, hi;
  Inner in;
  float vals[3];
  float sum() const { return vals[0] + vals[1] + vals[2]; }
};
kernel void struct_members(device float* out [[buffer(0)]],
                           threadgroup Rec* given [[threadgroup(0)]],
                           uint t [[thread_index_in_threadgroup]]) {
  threadgroup IndexVal<float> pairs[4];
  threadgroup Rec recs[4];
  threadgroup Rec one;
  pairs[t].index = t;                     // two threads' fields of one struct: no race
  pairs[t].val = float(t) * 2.0f;
  recs[t].lo = uchar(t);
  recs[t].hi = 0;
  recs[t].in.a = 1.5f;
  recs[t].in.b = float2(float(t), 10.0f);
  recs[t].vals[0] = 1.0f;
  recs[t].vals[1] = 3.0f;
  recs[t].vals[2] = float(t);
  given[t].hi = uchar(t + 1);
  threadgroup Rec* p = recs;
  (p + t)->in.b.x += 0.5f;
  if (t == 0) { one.lo = 9; p->hi = 7; }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  IndexVal<float> next = pairs[(t + 1) % 4];
  out[t] = next.val + float(next.index) * 100.0f + recs[t].lo + recs[t].in.b.x + recs[0].hi + one.lo +
           given[t].hi + recs[t].sum() * 1000.0f;
}

// one thread reads a field another writes, with no barrier: a race, named by the element
kernel void struct_member_race(device float* out [[buffer(0)]],
                               uint t [[thread_index_in_threadgroup]]) {
  threadgroup IndexVal<float> pairs[2];
  threadgroup IndexVal<float>* q = pairs;
  if (t == 0) q[1].val = 1.0f;
  if (t == 1) out[0] = (q + 1)->val;
}

// a bfloat threadgroup element converts to an integer implicitly, as bfloat does (MLX's sort
// stores `out[i] = tgp_vals[i]` in a branch its argsort instantiation never takes)
kernel void bfloat_element_to_integer(device const float* in [[buffer(0)]],
                                      device uint* out [[buffer(1)]],
                                      device int* out2 [[buffer(2)]],
                                      uint t [[thread_index_in_threadgroup]]) {
  threadgroup bfloat tile[4];
  tile[t] = bfloat(in[t]);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[t] = tile[3 - t];
  int v = tile[t];
  out2[t] = v;
}

// a brace list after a vector type initializes it as an aggregate: what it leaves out is zero
// (MLX's random.metal: `uint4 ks = {key.x, key.y, key.x ^ key.y ^ 0x1BD11BDA};`), where a
// constructor with one scalar fills every component
kernel void vector_brace_lists(device float* out [[buffer(0)]]) {
  float4 a = {1};
  float4 b = {1, 2}, c{3}, d = float4(5);
  const uint4 u = {3u, 4u, 5u};
  float2 pts[2] = {{1}, {2, 3}};
  vec<float, 3> g = {8};
  float4 h = float4{9};
  packed_float3 pk{6};
  float4 z{};
  float4 all = {1, 2, 3, 4};
  float4 parts = {float2(5, 6), 7};
  out[0] = a.x; out[1] = a.y; out[2] = b.y; out[3] = b.z; out[4] = c.w; out[5] = d.w;
  out[6] = float(u.z + u.w); out[7] = pts[0].y; out[8] = pts[1].y; out[9] = g.z; out[10] = h.y;
  out[11] = pk.y; out[12] = z.x; out[13] = all.w; out[14] = parts.z; out[15] = parts.w;
}

// `a * b` of simdgroup matrices, chained (MLX's conv.metal: `(G * g) * Gt`)
kernel void simdgroup_matrix_product(device const float* a [[buffer(0)]],
                                     device const float* b [[buffer(1)]],
                                     device float* out [[buffer(2)]]) {
  simdgroup_float8x8 A, B;
  simdgroup_load(A, a, 8);
  simdgroup_load(B, b, 8);
  simdgroup_float8x8 C = (A * B) * A;
  simdgroup_store(C, out, 8);
}

