// <metal_matrix>: floatCxR / halfCxR (C columns of R-component vectors; original code).
#pragma once

namespace metal {
template <class T, int C, int R> struct matrix {
  static_assert(C >= 2 && C <= 4 && R >= 2 && R <= 4, "matrices have 2 to 4 columns and rows");
  using value_type = T;
  using column_type = vec<T, R>;
  static constexpr int columns = C, rows = R;
  column_type col[C];

  matrix() = default;
  // a scalar fills the diagonal, every other element is 0
  MSLEMU_AI explicit matrix(T d) {
    for (int c = 0; c < C; ++c) { col[c] = column_type(T(0)); if (c < R) col[c][c] = d; }
  }
  // C column vectors
  template <class... A, class = std::enable_if_t<sizeof...(A) == C && (std::is_convertible_v<A, column_type> && ...)>>
  MSLEMU_AI matrix(const A&... cols) { int c = 0; ((col[c++] = column_type(cols)), ...); }
  // C * R scalars, column after column
  template <class... A, class = std::enable_if_t<sizeof...(A) == C * R && (mslemu::is_arith_v<A> && ...)>, class = void>
  MSLEMU_AI matrix(const A&... s) {
    T v[] = {(T)s...};
    for (int c = 0; c < C; ++c) for (int r = 0; r < R; ++r) col[c][r] = v[c * R + r];
  }
  template <class U, class = std::enable_if_t<!std::is_same_v<U, T>>>
  MSLEMU_AI explicit matrix(const matrix<U, C, R>& o) { for (int c = 0; c < C; ++c) col[c] = column_type(o.col[c]); }
  MSLEMU_AI column_type& operator[](int c) { return col[c]; }
  MSLEMU_AI const column_type& operator[](int c) const { return col[c]; }
};

template <class T, int C, int R> MSLEMU_AI matrix<T, C, R> operator+(const matrix<T, C, R>& a, const matrix<T, C, R>& b) {
  matrix<T, C, R> m; for (int c = 0; c < C; ++c) m.col[c] = a.col[c] + b.col[c]; return m; }
template <class T, int C, int R> MSLEMU_AI matrix<T, C, R> operator-(const matrix<T, C, R>& a, const matrix<T, C, R>& b) {
  matrix<T, C, R> m; for (int c = 0; c < C; ++c) m.col[c] = a.col[c] - b.col[c]; return m; }
template <class T, int C, int R> MSLEMU_AI matrix<T, C, R> operator-(const matrix<T, C, R>& a) {
  matrix<T, C, R> m; for (int c = 0; c < C; ++c) m.col[c] = -a.col[c]; return m; }
template <class T, int C, int R, class S, class = std::enable_if_t<mslemu::is_arith_v<S>>>
MSLEMU_AI matrix<T, C, R> operator*(const matrix<T, C, R>& a, S s) {
  matrix<T, C, R> m; for (int c = 0; c < C; ++c) m.col[c] = a.col[c] * (T)s; return m; }
template <class T, int C, int R, class S, class = std::enable_if_t<mslemu::is_arith_v<S>>>
MSLEMU_AI matrix<T, C, R> operator*(S s, const matrix<T, C, R>& a) { return a * s; }
// matrix * column vector: the columns weighted by the vector's components
template <class T, int C, int R> MSLEMU_AI vec<T, R> operator*(const matrix<T, C, R>& a, const vec<T, C>& v) {
  vec<T, R> r = a.col[0] * v[0];
  for (int c = 1; c < C; ++c) r = r + a.col[c] * v[c];
  return r;
}
// row vector * matrix: one dot product per column
template <class T, int C, int R> MSLEMU_AI vec<T, C> operator*(const vec<T, R>& v, const matrix<T, C, R>& a) {
  vec<T, C> r;
  for (int c = 0; c < C; ++c) { T s = v[0] * a.col[c][0]; for (int k = 1; k < R; ++k) s = s + v[k] * a.col[c][k]; r[c] = s; }
  return r;
}
template <class T, int K, int R, int C> MSLEMU_AI matrix<T, C, R> operator*(const matrix<T, K, R>& a, const matrix<T, C, K>& b) {
  matrix<T, C, R> m; for (int c = 0; c < C; ++c) m.col[c] = a * b.col[c]; return m; }
template <class T, int C, int R, class B> MSLEMU_AI matrix<T, C, R>& operator+=(matrix<T, C, R>& a, const B& b) { return a = a + b; }
template <class T, int C, int R, class B> MSLEMU_AI matrix<T, C, R>& operator-=(matrix<T, C, R>& a, const B& b) { return a = a - b; }
template <class T, int C, int R, class B> MSLEMU_AI matrix<T, C, R>& operator*=(matrix<T, C, R>& a, const B& b) { return a = a * b; }

template <class T, int C, int R> MSLEMU_FN matrix<T, R, C> transpose(const matrix<T, C, R>& a) {
  matrix<T, R, C> m; for (int c = 0; c < C; ++c) for (int r = 0; r < R; ++r) m.col[r][c] = a.col[c][r]; return m; }
template <class T> MSLEMU_FN T determinant(const matrix<T, 2, 2>& m) {
  return (T)((float)m[0][0] * (float)m[1][1] - (float)m[1][0] * (float)m[0][1]); }
template <class T> MSLEMU_FN T determinant(const matrix<T, 3, 3>& m) {
  float a = m[0][0], b = m[1][0], c = m[2][0], d = m[0][1], e = m[1][1], f = m[2][1], g = m[0][2], h = m[1][2], i = m[2][2];
  return (T)(a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g));
}
template <class T> MSLEMU_FN T determinant(const matrix<T, 4, 4>& m) {
  // expansion along the first column, on 3x3 minors
  float det = 0;
  for (int r = 0; r < 4; ++r) {
    float sub[9]; int k = 0;
    for (int c = 1; c < 4; ++c) for (int rr = 0; rr < 4; ++rr) if (rr != r) sub[k++] = m[c][rr];
    float minor = sub[0] * (sub[4] * sub[8] - sub[7] * sub[5]) - sub[3] * (sub[1] * sub[8] - sub[7] * sub[2]) +
                  sub[6] * (sub[1] * sub[5] - sub[4] * sub[2]);
    det += (r % 2 ? -1.0f : 1.0f) * (float)m[0][r] * minor;
  }
  return (T)det;
}
}  // namespace metal

#define MSLEMU_MTYPES(T, name) \
  typedef metal::matrix<T, 2, 2> name##2x2; typedef metal::matrix<T, 2, 3> name##2x3; typedef metal::matrix<T, 2, 4> name##2x4; \
  typedef metal::matrix<T, 3, 2> name##3x2; typedef metal::matrix<T, 3, 3> name##3x3; typedef metal::matrix<T, 3, 4> name##3x4; \
  typedef metal::matrix<T, 4, 2> name##4x2; typedef metal::matrix<T, 4, 3> name##4x3; typedef metal::matrix<T, 4, 4> name##4x4;
MSLEMU_MTYPES(float, float)
MSLEMU_MTYPES(half, half)
#undef MSLEMU_MTYPES
