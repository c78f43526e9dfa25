// Metal 4 tensors and MetalPerformancePrimitives' matmul2d for the emulator (original code).
//
// Written from the documentation comments of Apple's MetalPerformancePrimitives headers
// (MPPTensorOpsMatMul2d.h, SDK 26.2) and from how MLX's NAX kernels use them; no Apple code.
// The stage-1 stubs <metal_tensor> and <MetalPerformancePrimitives/...> include this file,
// so its text is preprocessed into the kernel source after mslemu.h and compiled with it.
// It therefore uses no Metal keywords (address spaces, `kernel`, [[attributes]]) and no
// C++ standard headers of its own: mslemu.h has included them by the time this compiles.
//
// What Apple documents and the emulator implements:
//   - tensor<T, extents, tensor_inline> over a buffer: extent(0) is the contiguous
//     dimension (columns of a row-major matrix), extent(1) the rows; slice() moves the
//     origin and keeps the edge at the original extents.
//   - matmul2d_descriptor(m, n, k, transpose_left, transpose_right, relaxed_precision,
//     mode): destination (m x n) = left (m x k) * right (k x n) [+ destination]; a
//     transposed operand is stored transposed. Elements outside an operand's extents read
//     as zero and are not written ("edge checking against the extents").
//   - matmul2d<descriptor, execution_simdgroup>::run: every thread of the simdgroup must
//     enter run (execution-scope uniform); the emulator makes run a simdgroup rendezvous and
//     reports a run reached by part of a simdgroup as SimdgroupDivergenceError.
//   - cooperative tensors (get_left_input_/get_right_input_/get_destination_cooperative_
//     tensor): thread-private elements; operator[], get_capacity, get_mask,
//     get_multidimensional_index, load, store.
// What Apple leaves to the implementation and the emulator chooses:
//   - which matrix element a lane's element i is: MLX's BaseNAXFrag coordinates (nax.h),
//     16x16 blocks of the operand as stored, in row-major block order, 8 elements per lane
//     per block (see frag_layout). A kernel whose result depends on this (it fills an
//     operand of run by index) gets a PortabilityWarning naming the line.
//   - precision: products and sums in float32 in k order, rounded once to the destination
//     type; relaxed_precision (which allows a GPU to be less accurate) changes nothing here.
// Not implemented (a compile error names them): execution_thread and execution_simdgroups<N>
// scopes, tensor_handle kernel parameters, integer and narrow-format operands, reductions
// and iterators of cooperative tensors, conversion of a cooperative tensor into an input.
#pragma once

namespace mslemu {
namespace tops {
MSLEMU_AI Fiber* fiber() { return ctx.cur; }

template <class T> constexpr int elem_kind() {  // 0 float, 1 half, 2 bfloat, -1 not supported here
  if constexpr (std::is_same_v<T, float>) return 0;
  else if constexpr (std::is_same_v<T, half>) return 1;
  else if constexpr (std::is_same_v<T, bfloat>) return 2;
  else return -1;
}
// Apple's table of operand types, restricted to the floating-point rows
template <class L, class R, class D> constexpr bool supported_types() {
  constexpr int l = elem_kind<L>(), r = elem_kind<R>(), d = elem_kind<D>();
  if (l < 0 || r < 0 || d < 0) return false;
  if (d == 0) return true;
  return l > 0 && r > 0 && (l == d || r == d);
}
template <class T> MSLEMU_AI T from_float(float v) { return (T)v; }

// One role of a cooperative tensor: which operand of the op, and the operand as stored.
enum Role { LEFT = 0, RIGHT = 1, DEST = 2 };
inline const char* role_name(int r) {
  return r == LEFT ? "left input" : r == RIGHT ? "right input" : "destination";
}

// The element-to-lane mapping (implementation-defined in Apple's headers): MLX's
// BaseNAXFrag. In a 16x16 block, lane l holds rows fm and fm + 8, columns fn .. fn + 3,
// with fm = 4*bit4(l) + bits 1-2 of l and fn = 4 * (2*bit3(l) + bit0(l)); its element e
// is row fm + 8*(e / 4), column fn + e % 4. Larger operands are 16x16 blocks in row-major
// block order, 8 elements per lane each.
template <int Role_, int Rows, int Cols> struct frag_layout {
  static_assert(Rows % 16 == 0 && Cols % 16 == 0,
                "the emulator lays cooperative tensors out in 16x16 blocks (MLX's BaseNAXFrag): "
                "m, n and k of a matmul2d with cooperative operands must be multiples of 16");
  static constexpr int role = Role_, rows = Rows, cols = Cols;
  static constexpr int capacity = Rows * Cols / 32;
  MSLEMU_AI static void coord(unsigned lane, int i, int& row, int& col) {
    int block = i / 8, e = i % 8;
    int fm = (int)(((lane >> 4) & 1u) * 4u + ((lane >> 1) & 3u));
    int fn = (int)((((lane >> 3) & 1u) * 2u + (lane & 1u)) * 4u);
    row = (block / (Cols / 16)) * 16 + fm + (e / 4) * 8;
    col = (block % (Cols / 16)) * 16 + fn + e % 4;
  }
};

// What the kernel did to a cooperative tensor's elements since its last load() or run():
// nothing (CLEAN), wrote every value through operator[] (INDEXED: the values may all be
// one constant, which is layout-independent), or more (TAINTED).
enum { CLEAN = 0, INDEXED = 1, TAINTED = 2 };
template <int Cap> struct coop_state {
  uint64_t bits[(Cap + 63) / 64] = {};
  int nwritten = 0;
  int state = CLEAN;
  float fill = 0.0f;
  const char* wfile = nullptr;
  int wline = 0;
  bool queried = false;  // get_multidimensional_index was asked: the kernel knows where elements are
  MSLEMU_AI void reset() {
    for (auto& b : bits) b = 0;
    nwritten = 0; state = CLEAN;
  }
  MSLEMU_AI void note(int i, float v, const char* file, int line) {
    uint64_t m = 1ull << (i % 64);
    if (!(bits[i / 64] & m)) { bits[i / 64] |= m; ++nwritten; }
    if (!wfile) { wfile = file; wline = line; }
    if (state == CLEAN) { state = INDEXED; fill = v; wfile = file; wline = line; }
    else if (state == INDEXED && !(v == fill)) state = TAINTED;
  }
  MSLEMU_AI void taint(const char* file, int line) {
    if (state == CLEAN || !wfile) { wfile = file; wline = line; }
    state = TAINTED;
  }
};

// A value on its way into a cooperative tensor, with the line of the assignment (the
// default arguments are evaluated where the implicit conversion happens).
template <class CT> struct coop_ref;
template <class X> struct is_coop_ref : std::false_type {};
template <class CT> struct is_coop_ref<coop_ref<CT>> : std::true_type {};
template <class T> struct site_val {
  T v;
  const char* file;
  int line;
  template <class U, class = std::enable_if_t<!is_coop_ref<std::remove_cv_t<U>>::value>>
  MSLEMU_AI site_val(const U& u, const char* f = __builtin_FILE(), int l = __builtin_LINE())
      : v(static_cast<T>(u)), file(f), line(l) {}
};

// Shared scratch for the operands of one run (computed by one fiber at a time).
inline float* scratch(size_t n) {
  static float* p = nullptr;
  static size_t cap = 0;
  if (n > cap) {
    if (p) ::operator delete(p);
    cap = n + 1024;
    p = (float*)::operator new(cap * sizeof(float));
  }
  return p;
}
}  // namespace tops
}  // namespace mslemu

// ------------------------------------------------------------------ <metal_tensor>
// __metal_get_thread_index_in_simdgroup, which MLX's nax.h calls, is in mslemu_builtins.h.

namespace metal {
// Metal's compiler takes vec<T, 8> too (a clang vector extension, not in the spec's list of
// vector types); MLX's NAX fragments are vec<T, 8>. Defined here, where it is needed.
template <class T> struct alignas(sizeof(T) * 8) vec<T, 8> {
  T e[8];
  MSLEMU_VEC_COMMON(8)
};

constexpr size_t dynamic_extent = (size_t)-1;

struct execution_thread {};
struct execution_simdgroup {};
template <unsigned N> struct execution_simdgroups {};

struct tensor_handle {};
struct tensor_offset {};
struct tensor_inline {};

template <class I, size_t... E> struct extents {
  using index_type = I;
  using size_type = size_t;
  using rank_type = size_t;
  static constexpr size_t rank_ = sizeof...(E);
  static constexpr size_t static_[rank_ ? rank_ : 1] = {E...};
  I ext_[rank_ ? rank_ : 1] = {};
  static constexpr size_t rank() { return rank_; }
  static constexpr size_t rank_dynamic() { return (0 + ... + (E == dynamic_extent ? 1 : 0)); }
  static constexpr size_t static_extent(size_t r) { return static_[r]; }
  constexpr extents() {
    for (size_t r = 0; r < rank_; ++r) ext_[r] = static_[r] == dynamic_extent ? I(0) : (I)static_[r];
  }
  // all extents, or only the dynamic ones (as std::extents)
  template <class... J, class = std::enable_if_t<sizeof...(J) != 0 && (std::is_integral_v<J> && ...)>>
  constexpr extents(J... v) {
    static_assert(sizeof...(J) == rank_ || sizeof...(J) == rank_dynamic(),
                  "extents: give every extent or every dynamic extent");
    const I given[] = {(I)v...};
    size_t k = 0;
    for (size_t r = 0; r < rank_; ++r) {
      if (sizeof...(J) == rank_) ext_[r] = given[r];
      else ext_[r] = static_[r] == dynamic_extent ? given[k++] : (I)static_[r];
    }
  }
  constexpr I extent(size_t r) const { return ext_[r]; }
};
template <class I, size_t R, size_t... E> struct dextents_ : dextents_<I, R - 1, dynamic_extent, E...> {};
template <class I, size_t... E> struct dextents_<I, 0, E...> { using type = extents<I, E...>; };
template <class I, size_t R> using dextents = typename dextents_<I, R>::type;

// A view of memory as a tensor (tensor_inline, and the tensor_offset views that slice()
// makes). The address space is gone by the time this compiles (the rewriter erases it from
// `tensor<device T, ...>`); the view keeps the buffer's bounds and whether it is
// threadgroup memory, for the bounds and race checks.
template <class T, class Ext, class Layout = tensor_handle> struct tensor {
  static_assert(!std::is_same_v<Layout, tensor_handle>,
                "tensor_handle (a tensor the host binds as a kernel argument) is not supported by the emulator: "
                "make a tensor<..., tensor_inline> from a buffer pointer and extents in the kernel");
  using element_type = T;
  using value_type = std::remove_cv_t<T>;
  using extents_type = Ext;
  using index_type = typename Ext::index_type;
  static constexpr size_t R = Ext::rank();
  T* p_ = nullptr;
  char* lo_ = nullptr;
  char* hi_ = nullptr;
  const char* name_ = "tensor";
  int as_ = 0;  // 0 thread (no bounds known), 1 device, 2 constant, 3 threadgroup
  Ext ext_;
  index_type st_[R ? R : 1] = {};

  tensor() = default;
  template <int A, class U, class = std::enable_if_t<std::is_same_v<std::remove_cv_t<U>, value_type>>>
  MSLEMU_AI tensor(const mslemu::ptr<A, U>& q, const Ext& e) : ext_(e) {
    bind(q);
    packed();
  }
  template <int A, class U, class S, class = std::enable_if_t<std::is_same_v<std::remove_cv_t<U>, value_type>>>
  MSLEMU_AI tensor(const mslemu::ptr<A, U>& q, const Ext& e, const S& strides) : ext_(e) {
    bind(q);
    for (size_t r = 0; r < R; ++r) st_[r] = (index_type)strides[r];
  }
  MSLEMU_AI tensor(T* q, const Ext& e) : p_(q), ext_(e) { packed(); }

  template <int A, class U> MSLEMU_AI void bind(const mslemu::ptr<A, U>& q) {
    p_ = (T*)q.p; lo_ = q.lo; hi_ = q.hi; name_ = q.name; as_ = A;
  }
  MSLEMU_AI void packed() {
    index_type s = 1;
    for (size_t r = 0; r < R; ++r) { st_[r] = s; s *= ext_.extent(r); }
  }
  MSLEMU_AI const Ext& extents() const { return ext_; }
  MSLEMU_AI index_type get_extent(size_t r) const { return ext_.extent(r); }
  MSLEMU_AI index_type get_stride(size_t r) const { return st_[r]; }

  // slice(o0, o1, ...): origin moved to the offsets, edges where they were
  template <size_t... E, class... O>
  MSLEMU_AI auto slice(O... offsets) const {
    static_assert(sizeof...(O) == R, "slice: one offset per dimension");
    using NE = std::conditional_t<sizeof...(E) == 0, dextents<index_type, R>, ::metal::extents<index_type, E...>>;
    static_assert(NE::rank() == R, "slice: one extent per dimension");
    const index_type off[] = {(index_type)offsets...};
    tensor<T, NE, tensor_offset> t;
    t.p_ = p_; t.lo_ = lo_; t.hi_ = hi_; t.name_ = name_; t.as_ = as_;
    for (size_t r = 0; r < R; ++r) {
      t.p_ += (ptrdiff_t)off[r] * st_[r];
      t.st_[r] = st_[r];
      index_type left = ext_.extent(r) > off[r] ? (index_type)(ext_.extent(r) - off[r]) : index_type(0);
      t.ext_.ext_[r] = NE::static_extent(r) == dynamic_extent ? left : (index_type)NE::static_extent(r);
    }
    return t;
  }
  template <size_t... E, class... O> MSLEMU_AI auto static_slice(O... offsets) const { return slice<E...>(offsets...); }

  // element (x, y): x along extent(0), y along extent(1); zero outside the extents
  MSLEMU_AI bool inside(long x, long y) const {
    return x >= 0 && y >= 0 && x < (long)ext_.extent(0) && y < (long)ext_.extent(1);
  }
  MSLEMU_AI T* at(long x, long y, const void* pc, int write) const {
    T* q = p_ + x * (ptrdiff_t)st_[0] + y * (ptrdiff_t)st_[1];
    if (as_ && ((char*)q < lo_ || (char*)(q + 1) > hi_)) q = (T*)mslemu::oob(pc, q, lo_, hi_, sizeof(T), name_, write);
    return q;
  }
  MSLEMU_AI float read(long x, long y, const void* pc) const {
    if (!inside(x, y)) return 0.0f;
    T* q = at(x, y, pc, 0);
    if (as_ == mslemu::AS_THREADGROUP) mslemu::tg_read(q, pc);
    return (float)*q;
  }
  template <class V> MSLEMU_AI void write(long x, long y, V v, const void* pc) const {
    static_assert(!std::is_const_v<T>, "a tensor of const elements cannot be a destination");
    if (!inside(x, y)) return;
    T* q = at(x, y, pc, 1);
    if (as_ == mslemu::AS_THREADGROUP) mslemu::tg_write(q, pc);
    *q = (T)v;
  }
  template <class O> MSLEMU_AI bool same_view(const O& o) const {
    if ((const void*)p_ != (const void*)o.p_) return false;
    for (size_t r = 0; r < R; ++r)
      if (ext_.extent(r) != (index_type)o.ext_.extent(r) || st_[r] != (index_type)o.st_[r]) return false;
    return true;
  }
};
template <class X> struct is_tensor_ : std::false_type {};
template <class T, class E, class L> struct is_tensor_<tensor<T, E, L>> : std::true_type {};

template <class T, class Ext, class Layout> struct cooperative_tensor;
template <class X> struct is_cooperative_tensor_ : std::false_type {};
template <class T, class E, class L> struct is_cooperative_tensor_<cooperative_tensor<T, E, L>> : std::true_type {};

// Thread-private elements of one operand of one tensor op (Layout: mslemu::tops::frag_layout).
template <class T, class Ext, class Layout> struct cooperative_tensor {
  using element_type = T;
  using value_type = T;
  using extents_type = Ext;
  using layout = Layout;
  static constexpr int cap = Layout::capacity;
  T e_[cap] = {};
  mslemu::tops::coop_state<cap> st_;

  static constexpr uint16_t get_capacity() { return (uint16_t)cap; }
  // every element of the emulator's layout is valid
  MSLEMU_AI bool get_mask(int i) const { return i >= 0 && i < cap; }
  MSLEMU_AI T* elem(int i) const {
    T* q = (T*)&e_[i];
    if (__builtin_expect(i < 0 || i >= cap, 0))
      q = (T*)mslemu::oob(mslemu::here(), q, e_, e_ + cap, sizeof(T), index_name(), 0);
    return q;
  }
  static const char* index_name() {
    return Layout::role == mslemu::tops::LEFT ? "cooperative tensor (left input)"
         : Layout::role == mslemu::tops::RIGHT ? "cooperative tensor (right input)"
                                               : "cooperative tensor (destination)";
  }
  MSLEMU_AI mslemu::tops::coop_ref<cooperative_tensor> operator[](int i) { return {this, i, elem(i)}; }
  MSLEMU_AI T operator[](int i) const { return *elem(i); }
  // (column, row) of element i in the operand's own coordinates, as Apple documents
  MSLEMU_AI vec<int, 2> get_multidimensional_index(int i) {
    st_.queried = true;
    int r, c;
    Layout::coord(mslemu::tops::fiber()->lane, i, r, c);
    return vec<int, 2>(c, r);
  }
  // load / store through a tensor, in this layout; elements outside its extents read as zero
  template <class TT, class TE, class TL> MSLEMU_AI void load(const tensor<TT, TE, TL>& t) {
    const void* pc = mslemu::here();
    unsigned lane = mslemu::tops::fiber()->lane;
    for (int i = 0; i < cap; ++i) {
      int r, c;
      Layout::coord(lane, i, r, c);
      e_[i] = mslemu::tops::from_float<T>(t.read(c, r, pc));
    }
    st_.reset();
  }
  template <class TT, class TE, class TL> MSLEMU_AI void store(const tensor<TT, TE, TL>& t) const {
    const void* pc = mslemu::here();
    unsigned lane = mslemu::tops::fiber()->lane;
    for (int i = 0; i < cap; ++i) {
      int r, c;
      Layout::coord(lane, i, r, c);
      t.write(c, r, e_[i], pc);
    }
  }
};
}  // namespace metal

namespace mslemu {
namespace tops {
template <class CT> struct coop_ref {
  using T = typename CT::value_type;
  CT* t;
  int i;
  T* q;
  MSLEMU_AI operator T() const { return *q; }
  MSLEMU_AI const coop_ref& operator=(const site_val<T>& s) const {
    t->st_.note(i, (float)s.v, s.file, s.line);
    *q = s.v;
    return *this;
  }
  // element copies between cooperative tensors keep the layout only between operands of
  // one role and shape, at one index
  template <class CT2> MSLEMU_AI void note_copy(const coop_ref<CT2>& o) const {
    using L1 = typename CT::layout;
    using L2 = typename CT2::layout;
    constexpr bool same = L1::role == L2::role && L1::rows == L2::rows && L1::cols == L2::cols;
    if (same && o.i == i) {
      if (o.t->st_.state == TAINTED) t->st_.taint(o.t->st_.wfile, o.t->st_.wline);
      else if (o.t->st_.state == INDEXED) t->st_.note(i, (float)*o.q, o.t->st_.wfile, o.t->st_.wline);
    } else {
      t->st_.taint(o.t->st_.wfile, o.t->st_.wline);
    }
  }
  MSLEMU_AI const coop_ref& operator=(const coop_ref& o) const {
    T v = *o.q; note_copy(o); *q = v; return *this;
  }
  template <class CT2> MSLEMU_AI const coop_ref& operator=(const coop_ref<CT2>& o) const {
    T v = static_cast<T>((typename CT2::value_type)*o.q); note_copy(o); *q = v; return *this;
  }
#define MSLEMU_TOPS_CASSIGN(op)                                                                    \
  MSLEMU_AI const coop_ref& operator op##=(const site_val<T>& s) const {                             \
    T v = static_cast<T>(*q op s.v); t->st_.note(i, (float)v, s.file, s.line); *q = v; return *this; \
  }                                                                                                \
  template <class CT2> MSLEMU_AI const coop_ref& operator op##=(const coop_ref<CT2>& o) const {     \
    T v = static_cast<T>(*q op (typename CT2::value_type)*o.q);                                     \
    if (o.t->st_.state != CLEAN) note_copy(o);                                                     \
    *q = v; return *this;                                                                          \
  }
  MSLEMU_TOPS_CASSIGN(+) MSLEMU_TOPS_CASSIGN(-) MSLEMU_TOPS_CASSIGN(*) MSLEMU_TOPS_CASSIGN(/)
#undef MSLEMU_TOPS_CASSIGN
};
}  // namespace tops
}  // namespace mslemu

// ------------------------------------------------------------------ MetalPerformancePrimitives
namespace mpp {
namespace tensor_ops {
enum class reduction_operation { sum, max, min };

struct matmul2d_descriptor;
}  // namespace tensor_ops
}  // namespace mpp

namespace mslemu {
namespace tops {
// C++17 has no class-type template parameters, so matmul2d<descriptor, scope> receives the
// descriptor packed into an integer by its conversion operator (a converted constant
// expression may call it). m and n take 16 bits, k 20 (all ones: dynamic), then the flags.
constexpr unsigned long long K_DYNAMIC = 0xFFFFFull;
void matmul2d_descriptor_m_and_n_must_be_1_to_65535_and_k_below_1048575();  // never defined: a compile error
constexpr unsigned long long pack(int m, int n, int k, bool tl, bool tr, bool rp, int mode) {
  if (m < 1 || m > 65535 || n < 1 || n > 65535 || (k != -1 && (k < 0 || (unsigned long long)k >= K_DYNAMIC)))
    matmul2d_descriptor_m_and_n_must_be_1_to_65535_and_k_below_1048575();
  unsigned long long kk = k == -1 ? K_DYNAMIC : (unsigned long long)k;
  return (unsigned long long)m | (unsigned long long)n << 16 | kk << 32 | (unsigned long long)tl << 52 |
         (unsigned long long)tr << 53 | (unsigned long long)rp << 54 | (unsigned long long)mode << 55;
}

struct run_args {
  const void* ops[3];  // left, right, destination of this lane
  const void* pc;      // where run was called (for bounds and race reports)
};

template <class X> struct elem_of { using type = typename X::value_type; };
template <class X> using elem_t = typename elem_of<std::remove_cv_t<X>>::type;
template <class X> constexpr bool is_coop_v = metal::is_cooperative_tensor_<std::remove_cv_t<X>>::value;
template <class X> constexpr bool is_tensor_v = metal::is_tensor_<std::remove_cv_t<X>>::value;

// "0-15,20": the lanes whose flag equals want
inline const char* lane_list_(char* buf, size_t n, const bool* in, bool want) {
  size_t k = 0;
  buf[0] = 0;
  for (int i = 0; i < 32;) {
    if (in[i] != want) { ++i; continue; }
    int j = i;
    while (j + 1 < 32 && in[j + 1] == want) ++j;
    int w = j > i ? __builtin_snprintf(buf + k, n - k, "%s%d-%d", k ? "," : "", i, j)
                  : __builtin_snprintf(buf + k, n - k, "%s%d", k ? "," : "", i);
    if (w < 0 || (size_t)w >= n - k) break;
    k += (size_t)w;
    i = j + 1;
  }
  return buf;
}

// Was this cooperative operand filled in a way whose meaning depends on the layout?
template <class CT> inline bool layout_dependent(Fiber** L, int which, const char** file, int* line) {
  bool indexed = false, clean = false, fill_set = false;
  float fill = 0.0f;
  for (int i = 0; i < 32; ++i) {
    const CT* t = (const CT*)((const run_args*)L[i]->cin)->ops[which];
    const auto& s = t->st_;
    if (s.queried) return false;  // the kernel asked where its elements are
    if (s.state == CLEAN) { clean = true; continue; }
    *file = s.wfile; *line = s.wline;
    if (s.state == TAINTED || s.nwritten < CT::cap) return true;
    indexed = true;
    if (fill_set && !(s.fill == fill)) return true;
    fill = s.fill; fill_set = true;
  }
  return indexed && clean;  // some lanes wrote a constant, others hold loaded data
}

inline bool& layout_warned() { static bool w = false; return w; }  // one warning per launch is enough
template <class X> inline void warn_layout(Fiber** L, int which, const char* role) {
  bool& warned = layout_warned();
  if (warned) return;
  const char* file = nullptr;
  int line = 0;
  if (!layout_dependent<X>(L, which, &file, &line)) return;
  warned = true;
  char msg[1536];
  __builtin_snprintf(msg, sizeof msg,
      "%s:%d fills the %s cooperative tensor of the matmul2d run at %s:%d element by element "
      "(operator[]), so the result depends on which matrix element a lane's element i is; Apple's "
      "MetalPerformancePrimitives leave that to the implementation (documented ways in are load(), "
      "store() and get_multidimensional_index()), and the emulator uses the layout MLX's BaseNAXFrag "
      "assumes (not portable)",
      file ? file : "?", line, role, L[0]->wfile ? L[0]->wfile : "?", L[0]->wline);
  portability(file ? file : "?", line, "%s", msg);  // a PortabilityWarning of the launch
}

// Gather one operand, as stored (rows x cols, row-major floats), from every lane.
template <class X, int Role> inline void gather(Fiber** L, int which, float* S, int rows, int cols, const void* pc) {
  using Xb = std::remove_cv_t<X>;
  if constexpr (is_coop_v<Xb>) {
    for (int i = 0; i < 32; ++i) {
      const Xb* t = (const Xb*)((const run_args*)L[i]->cin)->ops[which];
      for (int e = 0; e < Xb::cap; ++e) {
        int r, c;
        Xb::layout::coord((unsigned)i, e, r, c);
        S[r * cols + c] = (float)t->e_[e];
      }
    }
  } else {
    const Xb* t0 = (const Xb*)((const run_args*)L[0]->cin)->ops[which];
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) S[r * cols + c] = t0->read(c, r, pc);
  }
}

template <class X> inline void same_tensor_on_every_lane(Fiber** L, int which, const char* role) {
  using Xb = std::remove_cv_t<X>;
  if constexpr (is_tensor_v<Xb>) {
    const Xb* t0 = (const Xb*)((const run_args*)L[0]->cin)->ops[which];
    for (int i = 1; i < 32; ++i) {
      const Xb* t = (const Xb*)((const run_args*)L[i]->cin)->ops[which];
      if (!t->same_view(*t0))
        fail(E_DIVERGE, "matmul2d run at %s:%d: lanes 0 and %d of simdgroup %u pass different tensors as the %s; "
             "a tensor operand must be the same on every thread of the execution scope",
             L[0]->wfile, L[0]->wline, i, L[0]->sg, role);
    }
  }
}

template <class Op, class LT, class RT, class DT> void run_combine(int, Fiber** L, int n) {
  constexpr int M = Op::M, N = Op::N;
  constexpr bool TL = Op::TL, TR = Op::TR, ACC = Op::ACC;
  using D = elem_t<DT>;
  // the whole simdgroup, or a diagnostic
  bool present[32] = {};
  int first = -1, count = 0;
  for (int i = 0; i < n; ++i)
    if (L[i]) { present[i] = true; ++count; if (first < 0) first = i; }
  Fiber* f0 = L[first];
  if (n < 32)
    fail(E_LAUNCH, "matmul2d run at %s:%d: simdgroup %u has %d threads, but an execution_simdgroup tensor op "
         "needs a full simdgroup of 32 (make the threadgroup size a multiple of 32)", f0->wfile, f0->wline, f0->sg, n);
  if (count < 32) {
    char a[160], b[160];
    fail(E_DIVERGE, "simdgroup divergence in simdgroup %u: the matmul2d run at %s:%d is reached by lanes %s only "
         "(lanes %s finished the kernel without reaching it); every thread of the execution scope "
         "(execution_simdgroup: the whole simdgroup) "
         "must enter run", f0->sg, f0->wfile, f0->wline, lane_list_(a, sizeof a, present, true),
         lane_list_(b, sizeof b, present, false));
  }
  const void* pc = ((const run_args*)f0->cin)->pc;
  same_tensor_on_every_lane<LT>(L, 0, "left input");
  same_tensor_on_every_lane<RT>(L, 1, "right input");
  same_tensor_on_every_lane<DT>(L, 2, "destination");
  if constexpr (is_coop_v<LT>) warn_layout<std::remove_cv_t<LT>>(L, 0, "left input");
  if constexpr (is_coop_v<RT>) warn_layout<std::remove_cv_t<RT>>(L, 1, "right input");
  if constexpr (is_coop_v<DT> && ACC) warn_layout<std::remove_cv_t<DT>>(L, 2, "destination (accumulated)");

  // K: the descriptor's, or the tensors' (dynamic_extent)
  int K = Op::K;
  if (K < 0) {
    K = 0;
    if constexpr (is_tensor_v<LT>) {
      const auto* t = (const std::remove_cv_t<LT>*)((const run_args*)f0->cin)->ops[0];
      K = (int)t->get_extent(TL ? 1 : 0);
    }
    if constexpr (is_tensor_v<RT>) {
      const auto* t = (const std::remove_cv_t<RT>*)((const run_args*)f0->cin)->ops[1];
      int kr = (int)t->get_extent(TR ? 0 : 1);
      K = kr > K ? kr : K;
    }
  }
  const int rl = TL ? K : M, cl = TL ? M : K, rr = TR ? N : K, cr = TR ? K : N;
  float* SA = scratch((size_t)rl * cl + (size_t)rr * cr + (size_t)M * N);
  float* SB = SA + (size_t)rl * cl;
  float* SC = SB + (size_t)rr * cr;
  gather<LT, LEFT>(L, 0, SA, rl, cl, pc);
  gather<RT, RIGHT>(L, 1, SB, rr, cr, pc);
  if constexpr (ACC) gather<DT, DEST>(L, 2, SC, M, N, pc);
  else for (int i = 0; i < M * N; ++i) SC[i] = 0.0f;
  // D = A B (+ C): float32 products and sums, k in order, one rounding to D's type
  for (int r = 0; r < M; ++r)
    for (int k = 0; k < K; ++k) {
      float a = TL ? SA[(size_t)k * cl + r] : SA[(size_t)r * cl + k];
      if (a == 0.0f) continue;
      float* out = SC + (size_t)r * N;
      for (int c = 0; c < N; ++c) out[c] += a * (TR ? SB[(size_t)c * cr + k] : SB[(size_t)k * cr + c]);
    }
  using Db = std::remove_cv_t<DT>;
  if constexpr (is_coop_v<Db>) {
    for (int i = 0; i < 32; ++i) {
      Db* t = (Db*)((const run_args*)L[i]->cin)->ops[2];
      for (int e = 0; e < Db::cap; ++e) {
        int r, c;
        Db::layout::coord((unsigned)i, e, r, c);
        t->e_[e] = from_float<D>(SC[r * N + c]);
      }
      t->st_.reset();
    }
  } else {
    const Db* t0 = (const Db*)((const run_args*)f0->cin)->ops[2];
    for (int r = 0; r < M; ++r)
      for (int c = 0; c < N; ++c) t0->write(c, r, from_float<D>(SC[r * N + c]), pc);
  }
}
}  // namespace tops
}  // namespace mslemu

namespace mpp {
namespace tensor_ops {
struct matmul2d_descriptor {
  enum class mode { multiply, multiply_accumulate };
  int m, n, k;
  bool transpose_left, transpose_right;
  bool relaxed_precision;
  mode matmul_mode;
  constexpr matmul2d_descriptor(int m_, int n_, int k_ = (int)metal::dynamic_extent, bool transpose_left_ = false,
                                bool transpose_right_ = false, bool relaxed_precision_ = false,
                                mode matmul_mode_ = mode::multiply)
      : m(m_), n(n_), k(k_), transpose_left(transpose_left_), transpose_right(transpose_right_),
        relaxed_precision(relaxed_precision_), matmul_mode(matmul_mode_) {}
  constexpr operator unsigned long long() const {
    return mslemu::tops::pack(m, n, k, transpose_left, transpose_right, relaxed_precision, (int)matmul_mode);
  }
};

template <unsigned long long Descriptor, class Scope, class... Args> class matmul2d {
  static_assert(!std::is_same_v<Scope, metal::execution_thread>,
                "matmul2d<..., execution_thread>: the emulator runs tensor operations at execution_simdgroup scope only");
  static_assert(std::is_same_v<Scope, metal::execution_simdgroup>,
                "matmul2d<..., execution_simdgroups<N>>: the emulator runs tensor operations at execution_simdgroup "
                "scope only (one simdgroup per op, as MLX's NAX kernels use them)");

 public:
  static constexpr int M = (int)(Descriptor & 0xFFFF), N = (int)((Descriptor >> 16) & 0xFFFF);
  static constexpr int K = ((Descriptor >> 32) & 0xFFFFF) == mslemu::tops::K_DYNAMIC ? -1 : (int)((Descriptor >> 32) & 0xFFFFF);
  static constexpr bool TL = (Descriptor >> 52) & 1, TR = (Descriptor >> 53) & 1, RELAXED = (Descriptor >> 54) & 1;
  static constexpr bool ACC = ((Descriptor >> 55) & 1) != 0;
  static constexpr matmul2d_descriptor descriptor{M, N, K, TL, TR, RELAXED,
                                                  ACC ? matmul2d_descriptor::mode::multiply_accumulate
                                                      : matmul2d_descriptor::mode::multiply};
  using scope = Scope;

 private:
  template <int Role, int Rows, int Cols> using layout_ = mslemu::tops::frag_layout<Role, Rows, Cols>;
  static constexpr int KS = K < 0 ? 16 : K;  // k of the input layouts (they need a static k: asserted where made)

 public:
  using left_layout = layout_<mslemu::tops::LEFT, TL ? KS : M, TL ? M : KS>;
  using right_layout = layout_<mslemu::tops::RIGHT, TR ? N : KS, TR ? KS : N>;
  using destination_layout = layout_<mslemu::tops::DEST, M, N>;

  template <class L, class R, class E, class CoordType = int, class... CoopArgs>
  using cooperative_tensor_left_input_t =
      metal::cooperative_tensor<L, metal::extents<int, left_layout::cols, left_layout::rows>, left_layout>;
  template <class L, class R, class E, class CoordType = int, class... CoopArgs>
  using cooperative_tensor_right_input_t =
      metal::cooperative_tensor<R, metal::extents<int, right_layout::cols, right_layout::rows>, right_layout>;
  template <class LO, class RO, class E, class CoordType = int, class... CoopArgs>
  using cooperative_tensor_destination_t = metal::cooperative_tensor<E, metal::extents<int, N, M>, destination_layout>;

  matmul2d() = default;

  template <class L, class R, class E, class CoordType = int, class... CoopArgs>
  MSLEMU_AI cooperative_tensor_left_input_t<L, R, E> get_left_input_cooperative_tensor() const {
    static_assert(K >= 0, "a cooperative input tensor needs a matmul2d_descriptor with a static k (not dynamic_extent)");
    static_assert(mslemu::tops::supported_types<L, R, E>(),
                  "matmul2d: the emulator supports Apple's floating-point operand types (half, bfloat, float)");
    return {};
  }
  template <class L, class R, class E, class CoordType = int, class... CoopArgs>
  MSLEMU_AI cooperative_tensor_right_input_t<L, R, E> get_right_input_cooperative_tensor() const {
    static_assert(K >= 0, "a cooperative input tensor needs a matmul2d_descriptor with a static k (not dynamic_extent)");
    static_assert(mslemu::tops::supported_types<L, R, E>(),
                  "matmul2d: the emulator supports Apple's floating-point operand types (half, bfloat, float)");
    return {};
  }
  template <class LO, class RO, class E, class CoordType = int, class... CoopArgs>
  MSLEMU_AI cooperative_tensor_destination_t<LO, RO, E> get_destination_cooperative_tensor() const {
    static_assert(mslemu::tops::elem_kind<E>() >= 0,
                  "matmul2d: the emulator supports destination elements of half, bfloat and float");
    return {};
  }

  template <class LT, class RT, class DT, class... RunArgs>
  MSLEMU_AI void run(LT& left, RT& right, DT& destination, const char* file = __builtin_FILE(),
                     int line = __builtin_LINE()) const {
    using namespace mslemu::tops;
    static_assert((is_tensor_v<LT> || is_coop_v<LT>) && (is_tensor_v<RT> || is_coop_v<RT>) &&
                  (is_tensor_v<DT> || is_coop_v<DT>), "matmul2d::run takes tensors or cooperative tensors");
    static_assert(supported_types<std::remove_cv_t<elem_t<LT>>, std::remove_cv_t<elem_t<RT>>, elem_t<DT>>(),
                  "matmul2d::run: this combination of element types is not in Apple's table of floating-point "
                  "operands (or not supported by the emulator)");
    static_assert(!std::is_const_v<DT> && !std::is_const_v<typename DT::element_type>,
                  "matmul2d::run: the destination is written");
    if constexpr (is_coop_v<LT>) static_assert(std::is_same_v<typename std::remove_cv_t<LT>::layout, left_layout>,
                                               "matmul2d::run: the left cooperative tensor belongs to another operand or op");
    if constexpr (is_coop_v<RT>) static_assert(std::is_same_v<typename std::remove_cv_t<RT>::layout, right_layout>,
                                               "matmul2d::run: the right cooperative tensor belongs to another operand or op");
    if constexpr (is_coop_v<DT>) static_assert(std::is_same_v<typename DT::layout, destination_layout>,
                                               "matmul2d::run: the destination cooperative tensor belongs to another op");
    run_args a{{(const void*)&left, (const void*)&right, (const void*)&destination}, mslemu::here()};
    mslemu::Fiber* f = fiber();
    f->cin = &a;
    mslemu::collective(mslemu::OP_TENSOR_MATMUL2D, file, line, &run_combine<matmul2d, LT, RT, DT>);
  }
};
}  // namespace tensor_ops
}  // namespace mpp
