// <metal_uniform>: uniform<T> marks a value that is the same in every thread (original code).
// It changes how Metal's compiler may place the value, never the value itself, so here it
// is a transparent wrapper: it converts to T, and arithmetic on it is arithmetic on T.
#pragma once

namespace metal {
template <class T> struct uniform {
  static_assert(mslemu::is_arith_v<T> || mslemu::vecinfo<T>::n > 1, "uniform<T> holds a scalar or vector type");
  using value_type = T;
  T v;
  uniform() = default;
  MSLEMU_AI constexpr uniform(T x) : v(x) {}
  template <class U, class = std::enable_if_t<!std::is_same_v<U, T> && std::is_convertible_v<U, T>>>
  MSLEMU_AI constexpr uniform(const uniform<U>& o) : v((T)o.v) {}
  MSLEMU_AI constexpr operator T() const { return v; }
};
template <class A> MSLEMU_AI constexpr uniform<mslemu::val_t<A>> make_uniform(const A& x) {
  return uniform<mslemu::val_t<A>>(mslemu::val(x));
}
}  // namespace metal

namespace mslemu {
template <class T> struct unproxy<metal::uniform<T>> { using type = T; };
template <class X> struct is_uniform : std::false_type {};
template <class T> struct is_uniform<metal::uniform<T>> : std::true_type {};
}  // namespace mslemu

namespace metal {
// arithmetic on uniform values (of vector types too) computes on the values
#define MSLEMU_UOP(op)                                                                                         \
  template <class A, class B, class = std::enable_if_t<mslemu::is_uniform<mslemu::remove_cvref_t<A>>::value ||  \
                                                       mslemu::is_uniform<mslemu::remove_cvref_t<B>>::value>>   \
  MSLEMU_AI constexpr auto operator op(const A& a, const B& b) -> decltype(mslemu::val(a) op mslemu::val(b)) {  \
    return mslemu::val(a) op mslemu::val(b); }
MSLEMU_UOP(+) MSLEMU_UOP(-) MSLEMU_UOP(*) MSLEMU_UOP(/) MSLEMU_UOP(%) MSLEMU_UOP(&) MSLEMU_UOP(|) MSLEMU_UOP(^)
MSLEMU_UOP(<<) MSLEMU_UOP(>>) MSLEMU_UOP(==) MSLEMU_UOP(!=) MSLEMU_UOP(<) MSLEMU_UOP(>) MSLEMU_UOP(<=) MSLEMU_UOP(>=)
#undef MSLEMU_UOP
}  // namespace metal
