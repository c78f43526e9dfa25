// packed_<type><N>: vectors without the padding and alignment of the vec types (original code).
#pragma once

namespace metal {
template <class T, int N> struct packed_storage;
template <class T> struct packed_storage<T, 2> { union { T e[2]; struct { T x, y; }; struct { T r, g; }; }; };
template <class T> struct packed_storage<T, 3> { union { T e[3]; struct { T x, y, z; }; struct { T r, g, b; }; }; };
template <class T> struct packed_storage<T, 4> { union { T e[4]; struct { T x, y, z, w; }; struct { T r, g, b, a; }; }; };

template <class T, int N> struct packed_vec : packed_storage<T, N> {
  using value_type = T;
  static constexpr int size = N;
  packed_vec() = default;
  MSLEMU_AI packed_vec(const vec<T, N>& v) { for (int i = 0; i < N; ++i) this->e[i] = v[i]; }
  MSLEMU_AI explicit packed_vec(T s) { for (int i = 0; i < N; ++i) this->e[i] = s; }
  template <class... As>
  MSLEMU_AI packed_vec(__mslemu_brace_list, const As&... as) : packed_vec(vec<T, N>(__mslemu_brace_list{}, as...)) {}
  template <class A0, class A1, class = std::enable_if_t<!std::is_same_v<A0, __mslemu_brace_list>>, class... As>
  MSLEMU_AI packed_vec(const A0& a0, const A1& a1, const As&... as) : packed_vec(vec<T, N>(a0, a1, as...)) {}
  MSLEMU_AI operator vec<T, N>() const { vec<T, N> v; for (int i = 0; i < N; ++i) v[i] = this->e[i]; return v; }
  template <class U, class = std::enable_if_t<!std::is_same_v<U, T>>>
  MSLEMU_AI explicit operator vec<U, N>() const { return vec<U, N>(v()); }
  MSLEMU_AI vec<T, N> v() const { return *this; }
  MSLEMU_AI T& operator[](int i) { return this->e[i]; }
  MSLEMU_AI const T& operator[](int i) const { return this->e[i]; }
#define MSLEMU_POP(op)                                                                                        \
  MSLEMU_AI friend vec<T, N> operator op(const packed_vec& a, const packed_vec& b) { return a.v() op b.v(); }   \
  MSLEMU_AI friend vec<T, N> operator op(const packed_vec& a, const vec<T, N>& b) { return a.v() op b; }       \
  MSLEMU_AI friend vec<T, N> operator op(const vec<T, N>& a, const packed_vec& b) { return a op b.v(); }       \
  MSLEMU_AI friend vec<T, N> operator op(const packed_vec& a, T b) { return a.v() op b; }                      \
  MSLEMU_AI friend vec<T, N> operator op(T a, const packed_vec& b) { return a op b.v(); }                      \
  MSLEMU_AI packed_vec& operator op##=(const vec<T, N>& b) { *this = v() op b; return *this; }                 \
  MSLEMU_AI packed_vec& operator op##=(T b) { *this = v() op b; return *this; }
  MSLEMU_POP(+) MSLEMU_POP(-) MSLEMU_POP(*) MSLEMU_POP(/)
#undef MSLEMU_POP
  MSLEMU_AI friend vec<T, N> operator-(const packed_vec& a) { return -a.v(); }
};
}  // namespace metal

#define MSLEMU_PTYPES(T, name)                        \
  typedef metal::packed_vec<T, 2> packed_##name##2;   \
  typedef metal::packed_vec<T, 3> packed_##name##3;   \
  typedef metal::packed_vec<T, 4> packed_##name##4;
MSLEMU_PTYPES(float, float)
MSLEMU_PTYPES(half, half)
MSLEMU_PTYPES(mslemu::bfloat, bfloat)
MSLEMU_PTYPES(int, int)
MSLEMU_PTYPES(unsigned int, uint)
MSLEMU_PTYPES(short, short)
MSLEMU_PTYPES(unsigned short, ushort)
MSLEMU_PTYPES(char, char)
MSLEMU_PTYPES(unsigned char, uchar)
MSLEMU_PTYPES(long, long)
MSLEMU_PTYPES(unsigned long, ulong)
MSLEMU_PTYPES(bool, bool)
#undef MSLEMU_PTYPES

namespace mslemu {
template <class T_, int N> struct is_vec_like<metal::packed_vec<T_, N>> : std::true_type {};
}  // namespace mslemu
