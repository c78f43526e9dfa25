// simdgroup_matrix<T, 8, 8> (original code): each lane holds two elements; multiplies are
// deferred and computed once per simdgroup (runtime.cpp: mma_flush).
#pragma once

namespace metal {
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
// the row count defaults to the column count, as in Metal (`make_filled_simdgroup_matrix<float, 8>(0.f)`)
template <class T, int C, int R = C> MSLEMU_AI simdgroup_matrix<T, C, R> make_filled_simdgroup_matrix(T v) {
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
// `a * b`: the product as a new matrix (MLX's conv.metal: `(G * g) * Gt`); an operator has no
// default arguments to take its call site from, so a divergence error names the operator
template <class T, int C, int R>
MSLEMU_AI simdgroup_matrix<T, C, R> operator*(const simdgroup_matrix<T, C, R>& a, const simdgroup_matrix<T, C, R>& b) {
  simdgroup_matrix<T, C, R> d;
  mma_<T, T, T, T, C, R>(d, a, b, nullptr, "simdgroup_matrix operator*", 0);
  return d;
}

}  // namespace metal
