// 16-bit floats stored as bits, computed in float: bfloat always, and half on compilers
// without _Float16 (original code).
#pragma once

namespace mslemu {
template <class T> struct is_half : std::false_type {};

template <int K>  // 0: IEEE half, 1: bfloat
struct f16 {
  uint16_t bits;
  f16() = default;
  static MSLEMU_AI constexpr uint16_t from_float(float f) { return K ? f32_to_bf16_bits(f) : f32_to_f16_bits(f); }
  template <class T, class = std::enable_if_t<std::is_arithmetic_v<T> || (is_half<T>::value && !std::is_same_v<T, f16>)>>
  MSLEMU_AI constexpr f16(T v) : bits(from_float((float)v)) {}
  // from what converts to float (a threadgroup element of float, say): one user-defined
  // conversion, as with a built-in half
  template <class T, class = std::enable_if_t<std::is_class_v<T> && !is_half<T>::value &&
                                              std::is_convertible_v<const T&, float>>, class = void>
  MSLEMU_AI constexpr f16(const T& v) : bits(from_float((float)v)) {}
  MSLEMU_AI constexpr operator float() const { return K ? bf16_bits_to_f32(bits) : f16_bits_to_f32(bits); }
  template <class H, class = std::enable_if_t<is_half<H>::value && !std::is_same_v<H, f16>>>
  MSLEMU_AI constexpr explicit operator H() const { return H((float)*this); }
#define MSLEMU_BOP(op)                                                                                        \
  MSLEMU_AI constexpr friend f16 operator op(f16 a, f16 b) { return f16((float)a op (float)b); }               \
  template <class T, class = std::enable_if_t<std::is_integral_v<T>>>                                          \
  MSLEMU_AI constexpr friend f16 operator op(f16 a, T b) { return f16((float)a op (float)b); }                 \
  template <class T, class = std::enable_if_t<std::is_integral_v<T>>>                                          \
  MSLEMU_AI constexpr friend f16 operator op(T a, f16 b) { return f16((float)a op (float)b); }                 \
  MSLEMU_AI constexpr friend float operator op(f16 a, float b) { return (float)a op b; }                       \
  MSLEMU_AI constexpr friend float operator op(float a, f16 b) { return a op (float)b; }                       \
  MSLEMU_AI constexpr friend double operator op(f16 a, double b) { return (double)(float)a op b; }             \
  MSLEMU_AI constexpr friend double operator op(double a, f16 b) { return a op (double)(float)b; }             \
  template <class H, class = std::enable_if_t<is_half<H>::value && !std::is_same_v<H, f16>>, class = void>     \
  MSLEMU_AI constexpr friend float operator op(f16 a, H b) { return (float)a op (float)b; }                    \
  MSLEMU_AI constexpr f16& operator op##=(f16 b) { *this = f16((float)*this op (float)b); return *this; }      \
  MSLEMU_AI constexpr f16& operator op##=(float b) { *this = f16((float)*this op b); return *this; }
  MSLEMU_BOP(+) MSLEMU_BOP(-) MSLEMU_BOP(*) MSLEMU_BOP(/)
#undef MSLEMU_BOP
#define MSLEMU_BCMP(op)                                                                          \
  MSLEMU_AI constexpr friend bool operator op(f16 a, f16 b) { return (float)a op (float)b; }     \
  MSLEMU_AI constexpr friend bool operator op(f16 a, float b) { return (float)a op b; }          \
  MSLEMU_AI constexpr friend bool operator op(float a, f16 b) { return a op (float)b; }          \
  MSLEMU_AI constexpr friend bool operator op(f16 a, double b) { return (float)a op b; }         \
  MSLEMU_AI constexpr friend bool operator op(double a, f16 b) { return a op (float)b; }         \
  template <class T, class = std::enable_if_t<std::is_integral_v<T>>>                           \
  MSLEMU_AI constexpr friend bool operator op(f16 a, T b) { return (float)a op (float)b; }       \
  template <class T, class = std::enable_if_t<std::is_integral_v<T>>>                           \
  MSLEMU_AI constexpr friend bool operator op(T a, f16 b) { return (float)a op (float)b; }
  MSLEMU_BCMP(==) MSLEMU_BCMP(!=) MSLEMU_BCMP(<) MSLEMU_BCMP(>) MSLEMU_BCMP(<=) MSLEMU_BCMP(>=)
#undef MSLEMU_BCMP
  MSLEMU_AI constexpr f16 operator-() const { f16 r{}; r.bits = bits ^ 0x8000; return r; }
  MSLEMU_AI constexpr f16 operator+() const { return *this; }
  MSLEMU_AI constexpr f16& operator++() { return *this += 1.0f; }
  MSLEMU_AI constexpr f16& operator--() { return *this -= 1.0f; }
};
template <int K> struct is_half<f16<K>> : std::true_type {};
typedef f16<1> bfloat;
}  // namespace mslemu
