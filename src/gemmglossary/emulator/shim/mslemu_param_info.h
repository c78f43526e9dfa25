// What a kernel's parameters are, for the Python side (original code): the generated
// __mslemu_info_<id>() fills one ParamInfo (mslemu_abi.h) per parameter, and kernel.py
// checks each array it binds against it (dtype, element size).
#pragma once

namespace mslemu {

template <class X> struct elem_of { using type = X; };
template <int AS, class T> struct elem_of<ptr<AS, T>> { using type = T; };

// the kind of one scalar (ElemKind)
template <class S> constexpr int scalar_kind() {
  if constexpr (std::is_same_v<S, bool>) return EK_BOOL;
  else if constexpr (std::is_same_v<S, bfloat>) return EK_BFLOAT;  // before is_half, which bfloat also satisfies
  else if constexpr (is_half<S>::value || std::is_floating_point_v<S>) return EK_FLOAT;
  else if constexpr (std::is_same_v<S, char>) return EK_SINT;  // Metal's char is signed, whatever the host's is
  else if constexpr (std::is_integral_v<S> && std::is_signed_v<S>) return EK_SINT;
  else if constexpr (std::is_integral_v<S>) return EK_UINT;
  else if constexpr (std::is_class_v<S> || std::is_union_v<S>) return EK_STRUCT;
  else return EK_UNKNOWN;
}

// vectors, packed vectors and atomics are arrays of one scalar type as far as memory goes
template <class E> struct components { using type = E; static constexpr int n = 1; static constexpr bool atomic = false; };
template <class T, int N> struct components<metal::vec<T, N>> {
  using type = T; static constexpr int n = N; static constexpr bool atomic = false;
};
template <class T, int N> struct components<metal::packed_vec<T, N>> {
  using type = T; static constexpr int n = N; static constexpr bool atomic = false;
};
template <class T> struct components<metal::atomic<T>> {
  using type = T; static constexpr int n = 1; static constexpr bool atomic = true;
};

template <class A> ParamInfo info1(const ParamDesc& d) {
  using B0 = std::remove_cv_t<std::remove_reference_t<A>>;
  ParamInfo p{};
  p.kind = d.kind; p.index = d.index; p.gate = d.gate; p.is_ref = std::is_reference_v<A>;
  using E = std::remove_cv_t<typename elem_of<B0>::type>;
  if constexpr (is_ptr<B0>::value) { p.is_ptr = 1; p.address_space = B0::address_space; }
  if constexpr (std::is_void_v<E>) {
    p.elem_kind = EK_VOID;
  } else {
    using C = components<E>;
    using S = std::remove_cv_t<typename C::type>;
    p.elem_size = sizeof(E);
    p.elem_kind = scalar_kind<S>();
    p.lanes = C::n;
    p.lane_size = sizeof(S);
    p.is_atomic = C::atomic;
  }
  return p;
}

template <class R, class... A, size_t... I>
int info_(R (*)(A...), const ParamDesc* d, ParamInfo* out, std::index_sequence<I...>) {
  ((out[I] = info1<A>(d[I])), ...);
  return sizeof...(A);
}
template <class R, class... A> int info(R (*f)(A...), const ParamDesc* d, ParamInfo* out) {
  return info_(f, d, out, std::index_sequence_for<A...>{});
}

}  // namespace mslemu
