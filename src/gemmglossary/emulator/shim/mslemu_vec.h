// Vector types for the MSL shim (original code). The swizzle member lists come from
// mslemu_swizzles.h, which build.py writes with gemmglossary.emulator.shimgen.
#pragma once
#include "mslemu_swizzles.h"

namespace metal {

template <class T, int N> struct vec;
// The tag the rewriter puts first in a brace list after a vector type (`float4 v = {1}`):
// Metal's vectors take a brace list as an aggregate does, the components it leaves out
// being zero, (1, 0, 0, 0) here, where `float4(1)` is (1, 1, 1, 1); a C++ constructor
// cannot tell braces from parentheses by itself.
struct __mslemu_brace_list {};

template <int... I> constexpr bool distinct_indices() {
  constexpr int idx[] = {I...};
  for (size_t a = 0; a < sizeof...(I); ++a)
    for (size_t b = a + 1; b < sizeof...(I); ++b)
      if (idx[a] == idx[b]) return false;
  return true;
}

// a swizzle of a vector held in a register (thread memory)
template <class T, int N, int... I> struct swz {
  using V = vec<T, sizeof...(I)>;
  using value_type = T;
  T v[N == 3 ? 4 : N];
  MSLEMU_AI operator V() const { return V(v[I]...); }
  MSLEMU_AI swz& operator=(const V& r) {
    static_assert(distinct_indices<I...>(), "a swizzle that repeats a component cannot be assigned to");
    int k = 0; ((v[I] = r[k++]), ...); return *this;
  }
  MSLEMU_AI swz& operator=(const swz& o) { return *this = V(o); }
  template <int M, int... J> MSLEMU_AI swz& operator=(const swz<T, M, J...>& o) { return *this = V(o); }
  MSLEMU_AI T operator[](int i) const { return V(*this)[i]; }
};

template <class X> struct ncomp { static constexpr int value = 1; };
template <class T, int N> struct ncomp<vec<T, N>> { static constexpr int value = N; };
template <class T, int N, int... I> struct ncomp<swz<T, N, I...>> { static constexpr int value = sizeof...(I); };

template <class T, class X> MSLEMU_AI void vput(T* d, int& k, const X& x) {
  if constexpr (std::is_class_v<X> && ncomp<X>::value > 1) {
    using VV = vec<typename X::value_type, ncomp<X>::value>;
    VV v = VV(x);
    for (int i = 0; i < ncomp<X>::value; ++i) d[k++] = (T)v[i];
  } else d[k++] = (T)x;
}

#define MSLEMU_VEC_COMMON(N)                                                                   \
  using value_type = T;                                                                        \
  static constexpr int size = N;                                                               \
  vec() = default;                                                                             \
  MSLEMU_AI vec(const vec& o) = default;                                                       \
  MSLEMU_AI vec& operator=(const vec& o) { memcpy((void*)this, (const void*)&o, sizeof(vec)); return *this; } \
  MSLEMU_AI vec(T s) { for (int i = 0; i < N; ++i) e[i] = s; }                                 \
  template <class S, class = std::enable_if_t<mslemu::is_arith_v<S> && !std::is_same_v<S, T>>> \
  MSLEMU_AI vec(S s) { for (int i = 0; i < N; ++i) e[i] = (T)s; }                              \
  template <class A0, class A1, class = std::enable_if_t<!std::is_same_v<A0, __mslemu_brace_list>>, \
            class... As>                                                                       \
  MSLEMU_AI vec(const A0& a0, const A1& a1, const As&... as) {                                 \
    static_assert(ncomp<A0>::value + ncomp<A1>::value + (0 + ... + ncomp<As>::value) == N,     \
                  "wrong number of vector components");                                        \
    int k = 0; vput(e, k, a0); vput(e, k, a1); (vput(e, k, as), ...);                          \
  }                                                                                            \
  template <class... As>                                                                       \
  MSLEMU_AI vec(__mslemu_brace_list, const As&... as) {                                                 \
    static_assert((0 + ... + ncomp<As>::value) <= N, "too many components in a vector's brace list"); \
    for (int i = 0; i < N; ++i) e[i] = T(0);                                                   \
    int k = 0; (vput(e, k, as), ...);                                                          \
  }                                                                                            \
  template <class U, class = std::enable_if_t<!std::is_same_v<U, T>>>                          \
  MSLEMU_AI explicit vec(const vec<U, N>& o) { for (int i = 0; i < N; ++i) e[i] = (T)o[i]; }    \
  MSLEMU_AI T& operator[](int i) { return e[i]; }                                              \
  MSLEMU_AI const T& operator[](int i) const { return e[i]; }

#define MSLEMU_RSWZ(name, ...) swz<T, MSLEMU_N, __VA_ARGS__> name;
template <class T> struct alignas(sizeof(T) * 2) vec<T, 2> {
#define MSLEMU_N 2
  union { T e[2]; struct { T x, y; }; struct { T r, g; }; MSLEMU_SWIZZLES_2(MSLEMU_RSWZ) };
#undef MSLEMU_N
  MSLEMU_VEC_COMMON(2)
};
template <class T> struct alignas(sizeof(T) * 4) vec<T, 3> {
#define MSLEMU_N 3
  union { T e[4]; struct { T x, y, z; }; struct { T r, g, b; }; MSLEMU_SWIZZLES_3(MSLEMU_RSWZ) };
#undef MSLEMU_N
  MSLEMU_VEC_COMMON(3)
};
template <class T> struct alignas(sizeof(T) * 4) vec<T, 4> {
#define MSLEMU_N 4
  union { T e[4]; struct { T x, y, z, w; }; struct { T r, g, b, a; }; MSLEMU_SWIZZLES_4(MSLEMU_RSWZ) };
#undef MSLEMU_N
  MSLEMU_VEC_COMMON(4)
};
#undef MSLEMU_RSWZ

template <class T, int N> MSLEMU_AI vec<T, N> vload(const T* p) { vec<T, N> r; for (int i = 0; i < N; ++i) r[i] = p[i]; return r; }

#define MSLEMU_VOP(op)                                                                                          \
  template <class T, int N> MSLEMU_AI vec<T, N> operator op(const vec<T, N>& a, const vec<T, N>& b) {           \
    vec<T, N> r; for (int i = 0; i < N; ++i) r[i] = (T)(a[i] op b[i]); return r; }                             \
  template <class T, int N, class S, class = std::enable_if_t<mslemu::is_arith_v<S>>>                           \
  MSLEMU_AI vec<T, N> operator op(const vec<T, N>& a, S b) {                                                    \
    vec<T, N> r; for (int i = 0; i < N; ++i) r[i] = (T)(a[i] op (T)b); return r; }                             \
  template <class T, int N, class S, class = std::enable_if_t<mslemu::is_arith_v<S>>>                           \
  MSLEMU_AI vec<T, N> operator op(S a, const vec<T, N>& b) {                                                    \
    vec<T, N> r; for (int i = 0; i < N; ++i) r[i] = (T)((T)a op b[i]); return r; }                             \
  template <class T, int M, int... I, class B> MSLEMU_AI auto operator op(const swz<T, M, I...>& a, const B& b) { return vec<T, sizeof...(I)>(a) op b; } \
  template <class A, class T, int M, int... I, class = std::enable_if_t<ncomp<A>::value == 1>> \
  MSLEMU_AI auto operator op(const A& a, const swz<T, M, I...>& b) { return a op vec<T, sizeof...(I)>(b); }                        \
  template <class T, int N, int M, int... I> MSLEMU_AI vec<T, N> operator op(const vec<T, N>& a, const swz<T, M, I...>& b) { return a op vec<T, N>(b); } \
  template <class T, int N, class B> MSLEMU_AI vec<T, N>& operator op##=(vec<T, N>& a, const B& b) { a = a op b; return a; } \
  template <class T, int M, int... I, class B> MSLEMU_AI swz<T, M, I...>& operator op##=(swz<T, M, I...>& a, const B& b) { a = vec<T, sizeof...(I)>(a) op b; return a; }
MSLEMU_VOP(+) MSLEMU_VOP(-) MSLEMU_VOP(*) MSLEMU_VOP(/) MSLEMU_VOP(%) MSLEMU_VOP(&) MSLEMU_VOP(|) MSLEMU_VOP(^)
MSLEMU_VOP(<<) MSLEMU_VOP(>>)
#undef MSLEMU_VOP

#define MSLEMU_VCMP(op)                                                                                         \
  template <class T, int N> MSLEMU_AI vec<bool, N> operator op(const vec<T, N>& a, const vec<T, N>& b) {        \
    vec<bool, N> r; for (int i = 0; i < N; ++i) r[i] = a[i] op b[i]; return r; }                               \
  template <class T, int N, class S, class = std::enable_if_t<mslemu::is_arith_v<S>>>                           \
  MSLEMU_AI vec<bool, N> operator op(const vec<T, N>& a, S b) {                                                 \
    vec<bool, N> r; for (int i = 0; i < N; ++i) r[i] = a[i] op (T)b; return r; }                               \
  template <class T, int N, class S, class = std::enable_if_t<mslemu::is_arith_v<S>>>                           \
  MSLEMU_AI vec<bool, N> operator op(S a, const vec<T, N>& b) {                                                 \
    vec<bool, N> r; for (int i = 0; i < N; ++i) r[i] = (T)a op b[i]; return r; }                               \
  template <class T, int M, int... I, class B> MSLEMU_AI auto operator op(const swz<T, M, I...>& a, const B& b) { return vec<T, sizeof...(I)>(a) op b; } \
  template <class A, class T, int M, int... I, class = std::enable_if_t<ncomp<A>::value == 1>> \
  MSLEMU_AI auto operator op(const A& a, const swz<T, M, I...>& b) { return a op vec<T, sizeof...(I)>(b); }                        \
  template <class T, int N, int M, int... I> MSLEMU_AI vec<bool, N> operator op(const vec<T, N>& a, const swz<T, M, I...>& b) { return a op vec<T, N>(b); }
MSLEMU_VCMP(==) MSLEMU_VCMP(!=) MSLEMU_VCMP(<) MSLEMU_VCMP(>) MSLEMU_VCMP(<=) MSLEMU_VCMP(>=)
MSLEMU_VCMP(&&) MSLEMU_VCMP(||)
#undef MSLEMU_VCMP

template <class T, int N> MSLEMU_AI vec<T, N> operator-(const vec<T, N>& a) { vec<T, N> r; for (int i = 0; i < N; ++i) r[i] = -a[i]; return r; }
template <class T, int N> MSLEMU_AI vec<T, N> operator+(const vec<T, N>& a) { return a; }
template <class T, int N> MSLEMU_AI vec<T, N> operator~(const vec<T, N>& a) { vec<T, N> r; for (int i = 0; i < N; ++i) r[i] = ~a[i]; return r; }
template <class T, int N> MSLEMU_AI vec<bool, N> operator!(const vec<T, N>& a) { vec<bool, N> r; for (int i = 0; i < N; ++i) r[i] = !a[i]; return r; }
template <class T, int N> MSLEMU_AI vec<T, N>& operator++(vec<T, N>& a) { for (int i = 0; i < N; ++i) ++a[i]; return a; }
template <class T, int N> MSLEMU_AI vec<T, N>& operator--(vec<T, N>& a) { for (int i = 0; i < N; ++i) --a[i]; return a; }
template <class T, int N> MSLEMU_AI vec<T, N> operator++(vec<T, N>& a, int) { vec<T, N> r = a; ++a; return r; }
template <class T, int N> MSLEMU_AI vec<T, N> operator--(vec<T, N>& a, int) { vec<T, N> r = a; --a; return r; }
template <class T, int M, int... I> MSLEMU_AI auto operator-(const swz<T, M, I...>& a) { return -vec<T, sizeof...(I)>(a); }
template <class T, int M, int... I> MSLEMU_AI auto operator~(const swz<T, M, I...>& a) { return ~vec<T, sizeof...(I)>(a); }
template <class T, int M, int... I> MSLEMU_AI auto operator!(const swz<T, M, I...>& a) { return !vec<T, sizeof...(I)>(a); }

}  // namespace metal

#define MSLEMU_VTYPES(T, name)                   \
  typedef metal::vec<T, 2> name##2;              \
  typedef metal::vec<T, 3> name##3;              \
  typedef metal::vec<T, 4> name##4;
MSLEMU_VTYPES(bool, bool)
MSLEMU_VTYPES(char, char)
MSLEMU_VTYPES(unsigned char, uchar)
MSLEMU_VTYPES(short, short)
MSLEMU_VTYPES(unsigned short, ushort)
MSLEMU_VTYPES(int, int)
MSLEMU_VTYPES(unsigned int, uint)
MSLEMU_VTYPES(long, long)
MSLEMU_VTYPES(unsigned long, ulong)
MSLEMU_VTYPES(half, half)
MSLEMU_VTYPES(mslemu::bfloat, bfloat)
MSLEMU_VTYPES(float, float)
#undef MSLEMU_VTYPES

namespace mslemu {
template <class T_, int N> struct is_vec_like<metal::vec<T_, N>> : std::true_type {};
template <class X> struct vecinfo { static constexpr int n = 1; using T = X; };
template <class T_, int N> struct vecinfo<metal::vec<T_, N>> { static constexpr int n = N; using T = T_; };
}  // namespace mslemu
