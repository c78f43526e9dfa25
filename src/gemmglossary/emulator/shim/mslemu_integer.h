// <metal_integer> (original code). Every function works at the width of its argument type
// (char to long, signed and unsigned, scalars and vectors): clz((ushort)1) is 15, and a
// saturating add of two chars saturates at 127.
#pragma once

namespace mslemu {
namespace integer {
template <class E> inline constexpr int bits_v = (int)sizeof(E) * 8;
template <class E> using uns_t = std::make_unsigned_t<E>;
template <class E> using wide_t = std::conditional_t<
    (sizeof(E) < 8), std::conditional_t<std::is_signed_v<E>, int64_t, uint64_t>,
    std::conditional_t<std::is_signed_v<E>, __int128, unsigned __int128>>;
template <class E> MSLEMU_AI E saturate_to(wide_t<E> v) {
  constexpr wide_t<E> lo = (wide_t<E>)std::numeric_limits<E>::min(), hi = (wide_t<E>)std::numeric_limits<E>::max();
  return (E)(v < lo ? lo : v > hi ? hi : v);
}
template <class E> MSLEMU_AI E eclz(E x) {
  uns_t<E> u = (uns_t<E>)x;
  return u ? (E)(__builtin_clzll((unsigned long long)u) - (64 - bits_v<E>)) : (E)bits_v<E>;
}
template <class E> MSLEMU_AI E ectz(E x) {
  uns_t<E> u = (uns_t<E>)x;
  return u ? (E)__builtin_ctzll((unsigned long long)u) : (E)bits_v<E>;
}
template <class E> MSLEMU_AI E epopcount(E x) { return (E)__builtin_popcountll((unsigned long long)(uns_t<E>)x); }
template <class E> MSLEMU_AI E emulhi(E x, E y) { return (E)(((wide_t<E>)x * (wide_t<E>)y) >> bits_v<E>); }
template <class E> MSLEMU_AI E eaddsat(E x, E y) { return saturate_to<E>((wide_t<E>)x + (wide_t<E>)y); }
template <class E> MSLEMU_AI E esubsat(E x, E y) {
  if constexpr (std::is_unsigned_v<E>) return x < y ? E(0) : (E)(x - y);
  else return saturate_to<E>((wide_t<E>)x - (wide_t<E>)y);
}
template <class E> MSLEMU_AI E emadsat(E x, E y, E z) {
  if constexpr (sizeof(E) < 8) return saturate_to<E>((wide_t<E>)x * (wide_t<E>)y + (wide_t<E>)z);
  else {
    // 128 bits hold any 64-bit product; the sum may need one more bit
    __int128 p = (__int128)x * (__int128)y;
    if constexpr (std::is_signed_v<E>) {
      __int128 s = p + (__int128)z;
      if ((p > 0 && z > 0 && s < p) || (p < 0 && z < 0 && s > p)) return p > 0 ? std::numeric_limits<E>::max() : std::numeric_limits<E>::min();
      return saturate_to<E>(s);
    } else {
      unsigned __int128 q = (unsigned __int128)x * (unsigned __int128)y, s = q + (unsigned __int128)z;
      if (s < q || s > (unsigned __int128)std::numeric_limits<E>::max()) return std::numeric_limits<E>::max();
      return (E)s;
    }
  }
}
template <class E> MSLEMU_AI E ehadd(E x, E y) { return (E)(((wide_t<E>)x + (wide_t<E>)y) >> 1); }
template <class E> MSLEMU_AI E erhadd(E x, E y) { return (E)(((wide_t<E>)x + (wide_t<E>)y + 1) >> 1); }
template <class E> MSLEMU_AI E eabsdiff(E x, E y) {
  if constexpr (std::is_unsigned_v<E>) return x < y ? (E)(y - x) : (E)(x - y);
  else {
    wide_t<E> d = (wide_t<E>)x - (wide_t<E>)y;
    return (E)(d < 0 ? -d : d);
  }
}
// the low 24 bits of x (sign-extended for signed types)
template <class E> MSLEMU_AI E low24(E x) {
  if constexpr (std::is_signed_v<E>) return (E)((int32_t)((uint32_t)x << 8) >> 8);
  else return (E)(x & 0xffffffu);
}
template <class E> MSLEMU_AI E emul24(E x, E y) { return (E)((uns_t<E>)low24(x) * (uns_t<E>)low24(y)); }
template <class E> MSLEMU_AI E erotate(E v, E i) {
  constexpr int w = bits_v<E>;
  uns_t<E> u = (uns_t<E>)v;
  int s = (int)((uns_t<E>)i % (uns_t<E>)w);
  return s ? (E)(uns_t<E>)((u << s) | (u >> (w - s))) : v;
}
template <class E> MSLEMU_AI E ereverse(E x) {
  uns_t<E> u = (uns_t<E>)x, r = 0;
  for (int k = 0; k < bits_v<E>; ++k) r = (uns_t<E>)((r << 1) | ((u >> k) & 1));
  return (E)r;
}
template <class E> MSLEMU_AI E eextract(E x, uint offset, uint bits) {
  if (bits == 0) return 0;
  uns_t<E> u = (uns_t<E>)x;
  uns_t<E> field = (uns_t<E>)(u >> offset);
  if (bits < (uint)bits_v<E>) field &= (uns_t<E>)(((uns_t<E>)1 << bits) - 1);
  if constexpr (std::is_signed_v<E>) {
    if (bits < (uint)bits_v<E> && ((field >> (bits - 1)) & 1)) field |= (uns_t<E>)(~(uns_t<E>)0 << bits);
  }
  return (E)field;
}
template <class E> MSLEMU_AI E einsert(E base, E ins, uint offset, uint bits) {
  if (bits == 0) return base;
  uns_t<E> mask = bits >= (uint)bits_v<E> ? (uns_t<E>)~(uns_t<E>)0 : (uns_t<E>)(((uns_t<E>)1 << bits) - 1);
  mask = (uns_t<E>)(mask << offset);
  return (E)(uns_t<E>)(((uns_t<E>)base & ~mask) | (((uns_t<E>)ins << offset) & mask));
}

template <class... A> inline constexpr bool int_args_v = (is_int_elem_v<val_t<A>> && ...) && same_lengths_v<val_t<A>...>;
#define MSLEMU_INT1(name, fn)                                                                  \
  template <class A, class R = val_t<A>, class = std::enable_if_t<int_args_v<A>>>              \
  MSLEMU_FN R name(const A& a) { using E = typename comp<R>::type; return emap<R>([](E x) -> E { return fn(x); }, val(a)); }
#define MSLEMU_INT2(name, fn)                                                                  \
  template <class A, class B, class R = amix_t<val_t<A>, val_t<B>>, class = std::enable_if_t<int_args_v<A, B>>> \
  MSLEMU_FN R name(const A& a, const B& b) {                                                   \
    using E = typename comp<R>::type; return emap<R>([](E x, E y) -> E { return fn(x, y); }, val(a), val(b)); }
#define MSLEMU_INT3(name, fn)                                                                  \
  template <class A, class B, class C, class R = amix_t<val_t<A>, val_t<B>, val_t<C>>,         \
            class = std::enable_if_t<int_args_v<A, B, C>>>                                     \
  MSLEMU_FN R name(const A& a, const B& b, const C& c) {                                       \
    using E = typename comp<R>::type;                                                          \
    return emap<R>([](E x, E y, E z) -> E { return fn(x, y, z); }, val(a), val(b), val(c)); }
MSLEMU_INT1(clz, eclz) MSLEMU_INT1(ctz, ectz) MSLEMU_INT1(popcount, epopcount) MSLEMU_INT1(reverse_bits, ereverse)
MSLEMU_INT2(absdiff, eabsdiff) MSLEMU_INT2(addsat, eaddsat) MSLEMU_INT2(subsat, esubsat) MSLEMU_INT2(hadd, ehadd)
MSLEMU_INT2(rhadd, erhadd) MSLEMU_INT2(mulhi, emulhi) MSLEMU_INT2(mul24, emul24) MSLEMU_INT2(rotate, erotate)
#define MSLEMU_MADHI(x, y, z) (E)(emulhi(x, y) + z)
#define MSLEMU_MAD24(x, y, z) (E)(emul24(x, y) + z)
MSLEMU_INT3(madhi, MSLEMU_MADHI) MSLEMU_INT3(mad24, MSLEMU_MAD24) MSLEMU_INT3(madsat, emadsat)
#undef MSLEMU_MADHI
#undef MSLEMU_MAD24
#undef MSLEMU_INT1
#undef MSLEMU_INT2
#undef MSLEMU_INT3
template <class A, class R = val_t<A>, class = std::enable_if_t<int_args_v<A>>>
MSLEMU_FN R extract_bits(const A& x, uint offset, uint bits) {
  using E = typename comp<R>::type;
  return emap<R>([offset, bits](E v) -> E { return eextract(v, offset, bits); }, val(x));
}
template <class A, class B, class R = val_t<A>, class = std::enable_if_t<int_args_v<A, B>>>
MSLEMU_FN R insert_bits(const A& base, const B& ins, uint offset, uint bits) {
  using E = typename comp<R>::type;
  return emap<R>([offset, bits](E b, E i) -> E { return einsert(b, i, offset, bits); }, val(base), val(ins));
}
}  // namespace integer
}  // namespace mslemu

#define MSLEMU_INTEGER_LIST(X) X(clz) X(ctz) X(popcount) X(reverse_bits) X(absdiff) X(addsat) X(subsat) X(hadd) \
  X(rhadd) X(mulhi) X(mul24) X(rotate) X(madhi) X(mad24) X(madsat) X(extract_bits) X(insert_bits)
#define MSLEMU_USING_INTEGER(name) using ::mslemu::integer::name;
namespace metal { MSLEMU_INTEGER_LIST(MSLEMU_USING_INTEGER) }
#undef MSLEMU_USING_INTEGER
