// <metal_pack>: packing floats into normalized integers and back (original code).
// Floats are clamped to the normalized range and rounded to nearest even; a signed
// normalized integer unpacks to max(-1, c / (2^(bits-1) - 1)), an unsigned one to c / (2^bits - 1).
#pragma once

namespace mslemu {
namespace pack {
MSLEMU_FN uint unorm(float x, int bits) {
  float m = (float)((1u << bits) - 1);
  float v = __builtin_isnan(x) ? 0.0f : __builtin_fminf(__builtin_fmaxf(x, 0.0f), 1.0f);
  return (uint)__builtin_rintf(v * m);
}
MSLEMU_FN uint snorm(float x, int bits) {
  float m = (float)((1u << (bits - 1)) - 1);
  float v = __builtin_isnan(x) ? 0.0f : __builtin_fminf(__builtin_fmaxf(x, -1.0f), 1.0f);
  return (uint)(int)__builtin_rintf(v * m) & ((1u << bits) - 1);
}
MSLEMU_FN float from_unorm(uint c, int bits) { return (float)(c & ((1u << bits) - 1)) / (float)((1u << bits) - 1); }
MSLEMU_FN float from_snorm(uint c, int bits) {
  int v = (int)(c << (32 - bits)) >> (32 - bits);
  return __builtin_fmaxf(-1.0f, (float)v / (float)((1 << (bits - 1)) - 1));
}
template <class V> MSLEMU_FN uint pack4x8(const V& v, bool is_signed) {
  uint r = 0;
  for (int i = 0; i < 4; ++i) r |= (is_signed ? snorm((float)v[i], 8) : unorm((float)v[i], 8)) << (8 * i);
  return r;
}
template <class V> MSLEMU_FN uint pack2x16(const V& v, bool is_signed) {
  uint r = 0;
  for (int i = 0; i < 2; ++i) r |= (is_signed ? snorm((float)v[i], 16) : unorm((float)v[i], 16)) << (16 * i);
  return r;
}
template <class V> MSLEMU_FN V unpack4x8(uint x, bool is_signed) {
  V r;
  for (int i = 0; i < 4; ++i) r[i] = (typename V::value_type)(is_signed ? from_snorm(x >> (8 * i), 8) : from_unorm(x >> (8 * i), 8));
  return r;
}
template <class V> MSLEMU_FN V unpack2x16(uint x, bool is_signed) {
  V r;
  for (int i = 0; i < 2; ++i) r[i] = (typename V::value_type)(is_signed ? from_snorm(x >> (16 * i), 16) : from_unorm(x >> (16 * i), 16));
  return r;
}
template <class V> MSLEMU_FN uint pack10a2(const V& v) {
  return unorm((float)v[0], 10) | (unorm((float)v[1], 10) << 10) | (unorm((float)v[2], 10) << 20) | (unorm((float)v[3], 2) << 30);
}
template <class V> MSLEMU_FN V unpack10a2(uint x) {
  using E = typename V::value_type;
  return V((E)from_unorm(x, 10), (E)from_unorm(x >> 10, 10), (E)from_unorm(x >> 20, 10), (E)from_unorm(x >> 30, 2));
}
template <class V> MSLEMU_FN ushort pack565(const V& v) {
  return (ushort)(unorm((float)v[0], 5) | (unorm((float)v[1], 6) << 5) | (unorm((float)v[2], 5) << 11));
}
template <class V> MSLEMU_FN V unpack565(uint x) {
  using E = typename V::value_type;
  return V((E)from_unorm(x, 5), (E)from_unorm(x >> 5, 6), (E)from_unorm(x >> 11, 5));
}
}  // namespace pack
}  // namespace mslemu

// (templates only so that the vector types are not instantiated by every compile)
namespace metal {
template <class = void> MSLEMU_FN uint pack_float_to_snorm4x8(float4 v) { return ::mslemu::pack::pack4x8(v, true); }
template <class = void> MSLEMU_FN uint pack_float_to_unorm4x8(float4 v) { return ::mslemu::pack::pack4x8(v, false); }
template <class = void> MSLEMU_FN uint pack_half_to_snorm4x8(half4 v) { return ::mslemu::pack::pack4x8(v, true); }
template <class = void> MSLEMU_FN uint pack_half_to_unorm4x8(half4 v) { return ::mslemu::pack::pack4x8(v, false); }
template <class = void> MSLEMU_FN uint pack_float_to_snorm2x16(float2 v) { return ::mslemu::pack::pack2x16(v, true); }
template <class = void> MSLEMU_FN uint pack_float_to_unorm2x16(float2 v) { return ::mslemu::pack::pack2x16(v, false); }
template <class = void> MSLEMU_FN uint pack_half_to_snorm2x16(half2 v) { return ::mslemu::pack::pack2x16(v, true); }
template <class = void> MSLEMU_FN uint pack_half_to_unorm2x16(half2 v) { return ::mslemu::pack::pack2x16(v, false); }
template <class = void> MSLEMU_FN uint pack_float_to_unorm10a2(float4 v) { return ::mslemu::pack::pack10a2(v); }
template <class = void> MSLEMU_FN uint pack_half_to_unorm10a2(half4 v) { return ::mslemu::pack::pack10a2(v); }
template <class = void> MSLEMU_FN ushort pack_float_to_unorm565(float3 v) { return ::mslemu::pack::pack565(v); }
template <class = void> MSLEMU_FN ushort pack_half_to_unorm565(half3 v) { return ::mslemu::pack::pack565(v); }
template <class = void> MSLEMU_FN float4 unpack_snorm4x8_to_float(uint x) { return ::mslemu::pack::unpack4x8<float4>(x, true); }
template <class = void> MSLEMU_FN float4 unpack_unorm4x8_to_float(uint x) { return ::mslemu::pack::unpack4x8<float4>(x, false); }
template <class = void> MSLEMU_FN half4 unpack_snorm4x8_to_half(uint x) { return ::mslemu::pack::unpack4x8<half4>(x, true); }
template <class = void> MSLEMU_FN half4 unpack_unorm4x8_to_half(uint x) { return ::mslemu::pack::unpack4x8<half4>(x, false); }
template <class = void> MSLEMU_FN float2 unpack_snorm2x16_to_float(uint x) { return ::mslemu::pack::unpack2x16<float2>(x, true); }
template <class = void> MSLEMU_FN float2 unpack_unorm2x16_to_float(uint x) { return ::mslemu::pack::unpack2x16<float2>(x, false); }
template <class = void> MSLEMU_FN half2 unpack_snorm2x16_to_half(uint x) { return ::mslemu::pack::unpack2x16<half2>(x, true); }
template <class = void> MSLEMU_FN half2 unpack_unorm2x16_to_half(uint x) { return ::mslemu::pack::unpack2x16<half2>(x, false); }
template <class = void> MSLEMU_FN float4 unpack_unorm10a2_to_float(uint x) { return ::mslemu::pack::unpack10a2<float4>(x); }
template <class = void> MSLEMU_FN half4 unpack_unorm10a2_to_half(uint x) { return ::mslemu::pack::unpack10a2<half4>(x); }
template <class = void> MSLEMU_FN float3 unpack_unorm565_to_float(ushort x) { return ::mslemu::pack::unpack565<float3>(x); }
template <class = void> MSLEMU_FN half3 unpack_unorm565_to_half(ushort x) { return ::mslemu::pack::unpack565<half3>(x); }
}  // namespace metal
#define MSLEMU_PACK_LIST(X) X(pack_float_to_snorm4x8) X(pack_float_to_unorm4x8) X(pack_half_to_snorm4x8)           \
  X(pack_half_to_unorm4x8) X(pack_float_to_snorm2x16) X(pack_float_to_unorm2x16) X(pack_half_to_snorm2x16)         \
  X(pack_half_to_unorm2x16) X(pack_float_to_unorm10a2) X(pack_half_to_unorm10a2) X(pack_float_to_unorm565)         \
  X(pack_half_to_unorm565) X(unpack_snorm4x8_to_float) X(unpack_unorm4x8_to_float) X(unpack_snorm4x8_to_half)      \
  X(unpack_unorm4x8_to_half) X(unpack_snorm2x16_to_float) X(unpack_unorm2x16_to_float) X(unpack_snorm2x16_to_half) \
  X(unpack_unorm2x16_to_half) X(unpack_unorm10a2_to_float) X(unpack_unorm10a2_to_half) X(unpack_unorm565_to_float) \
  X(unpack_unorm565_to_half)
