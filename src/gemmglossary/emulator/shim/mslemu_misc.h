// as_type, <metal_array> and <metal_logging> (original code).
#pragma once

extern "C" int dprintf(int fd, const char* fmt, ...);

namespace metal {
// reinterpret the bits of a value as another type of the same size
template <class To, class From> MSLEMU_AI To as_type(const From& f) {
  using F = mslemu::val_t<From>;
  static_assert(sizeof(To) == sizeof(F), "as_type needs types of one size");
  F v = mslemu::val(f);
  To t; memcpy((void*)&t, (const void*)&v, sizeof(To)); return t;
}

template <class T, size_t N> struct array {
  T elems_[N > 0 ? N : 1];
  using value_type = T;
  using size_type = size_t;
  MSLEMU_AI constexpr size_t size() const { return N; }
  MSLEMU_AI constexpr size_t max_size() const { return N; }
  MSLEMU_AI constexpr bool empty() const { return N == 0; }
  MSLEMU_AI constexpr T& operator[](size_t i) { return elems_[i]; }
  MSLEMU_AI constexpr const T& operator[](size_t i) const { return elems_[i]; }
  MSLEMU_AI constexpr T& front() { return elems_[0]; }
  MSLEMU_AI constexpr T& back() { return elems_[N - 1]; }
  MSLEMU_AI constexpr T* data() { return elems_; }
  MSLEMU_AI constexpr const T* data() const { return elems_; }
  MSLEMU_AI constexpr T* begin() { return elems_; }
  MSLEMU_AI constexpr T* end() { return elems_ + N; }
  MSLEMU_AI constexpr const T* begin() const { return elems_; }
  MSLEMU_AI constexpr const T* end() const { return elems_ + N; }
};
// a view of contiguous elements with its length
template <class T> struct array_ref {
  const T* p;
  size_t n;
  constexpr array_ref() : p(nullptr), n(0) {}
  MSLEMU_AI constexpr array_ref(const T* q, size_t len) : p(q), n(len) {}
  template <size_t N> MSLEMU_AI constexpr array_ref(const array<T, N>& a) : p(a.data()), n(N) {}
  template <size_t N> MSLEMU_AI constexpr array_ref(const T (&a)[N]) : p(a), n(N) {}
  MSLEMU_AI constexpr size_t size() const { return n; }
  MSLEMU_AI constexpr bool empty() const { return n == 0; }
  MSLEMU_AI constexpr const T& operator[](size_t i) const { return p[i]; }
  MSLEMU_AI constexpr const T* data() const { return p; }
  MSLEMU_AI constexpr const T* begin() const { return p; }
  MSLEMU_AI constexpr const T* end() const { return p + n; }
};

// os_log: messages go to the standard error of the process that runs the threadgroup
struct os_log {
  const char* subsystem;
  const char* category;
  constexpr os_log(const char* s = "", const char* c = "") : subsystem(s), category(c) {}
  template <class... A> void log(const char* fmt, A... a) const { emit("", fmt, a...); }
  template <class... A> void log_debug(const char* fmt, A... a) const { emit("debug", fmt, a...); }
  template <class... A> void log_info(const char* fmt, A... a) const { emit("info", fmt, a...); }
  template <class... A> void log_error(const char* fmt, A... a) const { emit("error", fmt, a...); }
  template <class... A> void log_fault(const char* fmt, A... a) const { emit("fault", fmt, a...); }
 private:
  template <class X> static auto printable(const X& x) {
    using V = mslemu::val_t<X>;
    static_assert(mslemu::is_arith_v<V> || std::is_pointer_v<V>, "the emulator's os_log prints scalar arguments only");
    if constexpr (std::is_floating_point_v<V> || mslemu::is_half<V>::value) return (double)(float)mslemu::val(x);
    else return mslemu::val(x);
  }
  template <class... A> void emit(const char* level, const char* fmt, A... a) const {
    dprintf(2, "[os_log %s%s%s] ", subsystem, *level ? " " : "", level);
    dprintf(2, fmt, printable(a)...);
    dprintf(2, "\n");
  }
};
constexpr os_log os_log_default("", "");
}  // namespace metal
