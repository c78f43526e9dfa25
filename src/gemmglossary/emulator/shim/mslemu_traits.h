// <metal_type_traits> and <metal_limits> (original code): the C++ traits Metal re-exports,
// the ones that know half, bfloat and vectors, and the internal helpers Metal's own headers
// use (_conjunction, _disjunction, _negation), which MLX reaches through
// `#pragma METAL internals : enable`.
#pragma once

namespace metal {
using std::add_const;
using std::add_const_t;
using std::add_cv;
using std::add_lvalue_reference;
using std::add_lvalue_reference_t;
using std::add_pointer;
using std::add_pointer_t;
using std::add_rvalue_reference;
using std::add_rvalue_reference_t;
using std::add_volatile;
using std::aligned_storage;
using std::alignment_of;
using std::bool_constant;
using std::common_type;
using std::common_type_t;
using std::conditional;
using std::conditional_t;
using std::conjunction;
using std::conjunction_v;
using std::decay;
using std::decay_t;
using std::declval;
using std::disjunction;
using std::disjunction_v;
using std::enable_if;
using std::enable_if_t;
using std::extent;
using std::extent_v;
using std::false_type;
using std::integral_constant;
using std::is_array;
using std::is_array_v;
using std::is_assignable;
using std::is_base_of;
using std::is_base_of_v;
using std::is_class;
using std::is_class_v;
using std::is_const;
using std::is_const_v;
using std::is_constructible;
using std::is_constructible_v;
using std::is_convertible;
using std::is_convertible_v;
using std::is_copy_constructible;
using std::is_default_constructible;
using std::is_enum;
using std::is_enum_v;
using std::is_function;
using std::is_fundamental;
using std::is_integral;
using std::is_integral_v;
using std::is_lvalue_reference;
using std::is_member_pointer;
using std::is_pointer;
using std::is_pointer_v;
using std::is_reference;
using std::is_reference_v;
using std::is_rvalue_reference;
using std::is_same;
using std::is_same_v;
using std::is_signed;
using std::is_signed_v;
using std::is_standard_layout;
using std::is_trivial;
using std::is_trivially_copyable;
using std::is_union;
using std::is_unsigned;
using std::is_unsigned_v;
using std::is_void;
using std::is_void_v;
using std::is_volatile;
using std::make_signed;
using std::make_signed_t;
using std::make_unsigned;
using std::make_unsigned_t;
using std::negation;
using std::negation_v;
using std::rank;
using std::remove_all_extents;
using std::remove_const;
using std::remove_const_t;
using std::remove_cv;
using std::remove_cv_t;
using std::remove_extent;
using std::remove_extent_t;
using std::remove_pointer;
using std::remove_pointer_t;
using std::remove_reference;
using std::remove_reference_t;
using std::remove_volatile;
using std::remove_volatile_t;
using std::true_type;
using std::underlying_type;
using std::underlying_type_t;
using std::integer_sequence;
using std::index_sequence;
using std::make_integer_sequence;
using std::make_index_sequence;

// Metal's internal spellings
template <class... B> using _conjunction = std::conjunction<B...>;
template <class... B> using _disjunction = std::disjunction<B...>;
template <class B> using _negation = std::negation<B>;

// traits that know half and bfloat (the std ones do not)
template <class T> struct is_floating_point
    : std::bool_constant<std::is_floating_point_v<std::remove_cv_t<T>> || mslemu::is_half<std::remove_cv_t<T>>::value> {};
template <class T> inline constexpr bool is_floating_point_v = is_floating_point<T>::value;
template <class T> struct is_arithmetic : std::bool_constant<mslemu::is_arith_v<std::remove_cv_t<T>>> {};
template <class T> inline constexpr bool is_arithmetic_v = is_arithmetic<T>::value;
template <class T> struct is_vector : std::false_type {};
template <class T, int N> struct is_vector<vec<T, N>> : std::true_type {};
template <class T, int N> struct is_vector<const vec<T, N>> : std::true_type {};
template <class T> inline constexpr bool is_vector_v = is_vector<T>::value;
template <class T> struct is_scalar : std::bool_constant<mslemu::is_arith_v<std::remove_cv_t<T>> ||
                                                         std::is_pointer_v<T> || std::is_enum_v<T>> {};
template <class T> inline constexpr bool is_scalar_v = is_scalar<T>::value;
template <class T> struct vec_elements : std::integral_constant<int, 1> {};
template <class T, int N> struct vec_elements<vec<T, N>> : std::integral_constant<int, N> {};
template <class T> inline constexpr int vec_elements_v = vec_elements<T>::value;
template <class T> struct make_scalar { using type = T; };
template <class T, int N> struct make_scalar<vec<T, N>> { using type = T; };
template <class T> using make_scalar_t = typename make_scalar<T>::type;

// the emulator's pointers carry no address space in their element type
template <class T> struct remove_addrspace { using type = T; };
template <class T> using remove_addrspace_t = typename remove_addrspace<T>::type;
template <class T> struct is_device_address_space : std::false_type {};
template <class T> struct is_threadgroup_address_space : std::false_type {};

// ---------------------------------------------------------------- numeric_limits
template <class T> struct numeric_limits : std::numeric_limits<T> {};
template <class T> struct numeric_limits<const T> : numeric_limits<T> {};
template <> struct numeric_limits<mslemu::bfloat> {
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool is_integer = false;
  static constexpr bool is_exact = false;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
  static constexpr bool has_signaling_NaN = true;
  static constexpr bool has_denorm_loss = false;
  static constexpr int digits = 8;
  static constexpr int digits10 = 2;
  static constexpr int max_digits10 = 4;
  static constexpr int radix = 2;
  static constexpr int min_exponent = -125;
  static constexpr int min_exponent10 = -37;
  static constexpr int max_exponent = 128;
  static constexpr int max_exponent10 = 38;
  static constexpr mslemu::bfloat from_bits(uint16_t b) { mslemu::bfloat r{}; r.bits = b; return r; }
  static constexpr mslemu::bfloat max() { return from_bits(0x7f7f); }
  static constexpr mslemu::bfloat min() { return from_bits(0x0080); }
  static constexpr mslemu::bfloat lowest() { return from_bits(0xff7f); }
  static constexpr mslemu::bfloat epsilon() { return from_bits(0x3c00); }
  static constexpr mslemu::bfloat round_error() { return from_bits(0x3f00); }
  static constexpr mslemu::bfloat infinity() { return from_bits(0x7f80); }
  static constexpr mslemu::bfloat quiet_NaN() { return from_bits(0x7fc0); }
  static constexpr mslemu::bfloat signaling_NaN() { return from_bits(0x7f81); }
  static constexpr mslemu::bfloat denorm_min() { return from_bits(0x0001); }
};
template <> struct numeric_limits<half> {
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool is_integer = false;
  static constexpr bool is_exact = false;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
  static constexpr bool has_signaling_NaN = true;
  static constexpr bool has_denorm_loss = false;
  static constexpr int digits = 11;
  static constexpr int digits10 = 3;
  static constexpr int max_digits10 = 5;
  static constexpr int radix = 2;
  static constexpr int min_exponent = -13;
  static constexpr int min_exponent10 = -4;
  static constexpr int max_exponent = 16;
  static constexpr int max_exponent10 = 4;
  static constexpr half max() { return (half)65504.0f; }
  static constexpr half min() { return (half)6.103515625e-05f; }
  static constexpr half lowest() { return (half)-65504.0f; }
  static constexpr half epsilon() { return (half)0.0009765625f; }
  static constexpr half round_error() { return (half)0.5f; }
  static constexpr half infinity() { return (half)__builtin_inff(); }
  static constexpr half quiet_NaN() { return (half)__builtin_nanf(""); }
  static constexpr half signaling_NaN() { return (half)__builtin_nansf(""); }
  static constexpr half denorm_min() { return (half)5.9604644775390625e-08f; }
};
}  // namespace metal

// <metal_limits> macros
#define CHAR_BIT 8
#define SCHAR_MAX 127
#define SCHAR_MIN (-128)
#define UCHAR_MAX 255
#define CHAR_MAX SCHAR_MAX
#define CHAR_MIN SCHAR_MIN
#define USHRT_MAX 65535
#define SHRT_MAX 32767
#define SHRT_MIN (-32768)
#define UINT_MAX 0xffffffffu
#define INT_MAX 2147483647
#define INT_MIN (-2147483647 - 1)
#define ULONG_MAX 0xfffffffffffffffful
#define LONG_MAX 0x7fffffffffffffffl
#define LONG_MIN (-0x7fffffffffffffffl - 1)
#define FLT_DIG 6
#define FLT_MANT_DIG 24
#define FLT_MAX_10_EXP 38
#define FLT_MAX_EXP 128
#define FLT_MIN_10_EXP (-37)
#define FLT_MIN_EXP (-125)
#define FLT_RADIX 2
#define FLT_MAX 0x1.fffffep127f
#define FLT_MIN 0x1.0p-126f
#define FLT_EPSILON 0x1.0p-23f
#define HALF_DIG 3
#define HALF_MANT_DIG 11
#define HALF_MAX_10_EXP 4
#define HALF_MAX_EXP 16
#define HALF_MIN_10_EXP (-4)
#define HALF_MIN_EXP (-13)
#define HALF_RADIX 2
#define HALF_MAX ((half)0x1.ffcp15f)
#define HALF_MIN ((half)0x1.0p-14f)
#define HALF_EPSILON ((half)0x1.0p-10f)
#define DBL_MAX 1.7976931348623157e+308
#define DBL_MIN 2.2250738585072014e-308
#define DBL_EPSILON 2.2204460492503131e-16
