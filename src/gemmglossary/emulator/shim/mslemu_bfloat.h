// bfloat for the MSL shim: 16-bit storage, arithmetic in float, round-to-nearest-even.
#pragma once

namespace mslemu {
struct bfloat {
  uint16_t bits;
  bfloat() = default;
  static MSLEMU_AI constexpr uint16_t from_float(float f) {
    uint32_t u = __builtin_bit_cast(uint32_t, f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);  // NaN stays NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
  }
  template <class T, class = std::enable_if_t<std::is_arithmetic_v<T> || is_half<T>::value>>
  MSLEMU_AI constexpr bfloat(T v) : bits(from_float((float)v)) {}
  MSLEMU_AI constexpr operator float() const { return __builtin_bit_cast(float, (uint32_t)bits << 16); }
#define MSLEMU_BOP(op)                                                                              \
  MSLEMU_AI constexpr friend bfloat operator op(bfloat a, bfloat b) { return bfloat((float)a op (float)b); }  \
  template <class T, class = std::enable_if_t<std::is_integral_v<T>>>                               \
  MSLEMU_AI constexpr friend bfloat operator op(bfloat a, T b) { return bfloat((float)a op (float)b); }       \
  template <class T, class = std::enable_if_t<std::is_integral_v<T>>>                               \
  MSLEMU_AI constexpr friend bfloat operator op(T a, bfloat b) { return bfloat((float)a op (float)b); }       \
  MSLEMU_AI constexpr friend float operator op(bfloat a, float b) { return (float)a op b; }                   \
  MSLEMU_AI constexpr friend float operator op(float a, bfloat b) { return a op (float)b; }                   \
  MSLEMU_AI constexpr friend float operator op(bfloat a, _Float16 b) { return (float)a op (float)b; }         \
  MSLEMU_AI constexpr friend float operator op(_Float16 a, bfloat b) { return (float)a op (float)b; }         \
  MSLEMU_AI constexpr bfloat& operator op##=(bfloat b) { *this = bfloat((float)*this op (float)b); return *this; } \
  MSLEMU_AI constexpr bfloat& operator op##=(float b) { *this = bfloat((float)*this op b); return *this; }
  MSLEMU_BOP(+) MSLEMU_BOP(-) MSLEMU_BOP(*) MSLEMU_BOP(/)
#undef MSLEMU_BOP
#define MSLEMU_BCMP(op)                                                                          \
  MSLEMU_AI constexpr friend bool operator op(bfloat a, bfloat b) { return (float)a op (float)b; }          \
  MSLEMU_AI constexpr friend bool operator op(bfloat a, float b) { return (float)a op b; }                  \
  MSLEMU_AI constexpr friend bool operator op(float a, bfloat b) { return a op (float)b; }                  \
  template <class T, class = std::enable_if_t<std::is_integral_v<T>>>                            \
  MSLEMU_AI constexpr friend bool operator op(bfloat a, T b) { return (float)a op (float)b; }
  MSLEMU_BCMP(==) MSLEMU_BCMP(!=) MSLEMU_BCMP(<) MSLEMU_BCMP(>) MSLEMU_BCMP(<=) MSLEMU_BCMP(>=)
#undef MSLEMU_BCMP
  MSLEMU_AI constexpr bfloat operator-() const { bfloat r{}; r.bits = bits ^ 0x8000; return r; }
  MSLEMU_AI constexpr bfloat operator+() const { return *this; }
};
template <> struct is_half<bfloat> : std::true_type {};
}  // namespace mslemu
typedef mslemu::bfloat bfloat;
