// Kernel parameter binding for generated entry points (original code).
#pragma once

namespace mslemu {

struct ParamDesc { int kind; int index; const char* name; bool gate; };
// ParamKind and ParamInfo are in mslemu_abi.h


template <class A> MSLEMU_AI A attr_from(const uint32_t* v) {
  using B = std::remove_cv_t<std::remove_reference_t<A>>;
  if constexpr (vecinfo<B>::n == 1) return (B)v[0];
  else {
    B r;
    for (int i = 0; i < vecinfo<B>::n; ++i) r[i] = (typename vecinfo<B>::T)v[i];
    return r;
  }
}

alignas(64) extern char zero_block[4096];

// (out of line: it runs once per parameter as a thread starts, and reports by the parameter's
// name, not by a line)
template <class A> MSLEMU_OUTLINE A bind(const ParamDesc& d) {
  using B = std::remove_cv_t<std::remove_reference_t<A>>;
  const Fiber* f = ctx.cur;
  uint32_t v[3] = {0, 0, 0};
  switch (d.kind) {
    case P_BUFFER: case P_TGMEM: {
      bool tg = d.kind == P_TGMEM;
      char* data = d.gate ? (char*)(tg ? ctx.tgm[d.index] : ctx.buf[d.index]) : nullptr;
      uint64_t size = d.gate ? (tg ? ctx.tgm_size[d.index] : ctx.buf_size[d.index]) : 0;
      if constexpr (is_ptr<B>::value) {
        // a parameter switched off by a function constant reads as zeros (Metal leaves it
        // unbound; compilers drop the dead reads)
        if (!d.gate) return B((typename B::element_type*)zero_block, zero_block, zero_block + sizeof zero_block, d.name);
        if (!data && !tg) {  // left unbound: no valid element, and check() names the parameter
          char* u = unbound_addr(d.index);
          return B((typename B::element_type*)u, u, u, d.name);
        }
        return B((typename B::element_type*)data, data, data + size, d.name);
      } else {
        if (!d.gate) return *(B*)zero_block;
        if (!data && !tg) return *(B*)unbound_addr(d.index);  // a reference: the first read faults
        if (size < sizeof(B))
          fail(E_LAUNCH, "buffer(%d) bound to parameter '%s' has %llu bytes, but the parameter needs %zu", d.index, d.name,
               (unsigned long long)size, sizeof(B));
        return *(B*)data;
      }
    }
    case P_TPIG: for (int i = 0; i < 3; ++i) v[i] = ctx.tg_pos[i] * ctx.max_tptg[i] + f->pos[i]; break;
    case P_TPITG: for (int i = 0; i < 3; ++i) v[i] = f->pos[i]; break;
    case P_TGPIG: for (int i = 0; i < 3; ++i) v[i] = ctx.tg_pos[i]; break;
    case P_TPTG: for (int i = 0; i < 3; ++i) v[i] = ctx.tptg[i]; break;
    case P_TGPG: for (int i = 0; i < 3; ++i) v[i] = ctx.tgs_per_grid[i]; break;
    case P_TPG: for (int i = 0; i < 3; ++i) v[i] = ctx.threads_per_grid[i]; break;
    case P_TIITG: v[0] = f->tid; break;
    case P_LANE: v[0] = f->lane; break;
    case P_SGITG: v[0] = f->sg; break;
    case P_SGPTG: v[0] = ctx.nsg; break;
    case P_WIDTH: v[0] = 32; break;
    case P_ORIGIN: break;
    case P_QLANE: v[0] = f->tid % 4; break;
    case P_QGITG: v[0] = f->tid / 4; break;
    case P_QGPTG: v[0] = (ctx.nthreads + 3) / 4; break;
    default: break;
  }
  if constexpr (is_ptr<B>::value || std::is_class_v<B> && vecinfo<B>::n == 1) {
    fail(E_LAUNCH, "parameter '%s' has an unsupported binding", d.name);
  } else {
    if constexpr (std::is_reference_v<A>) {
      static B tmp[64];
      static unsigned k = 0;
      B& t = tmp[k++ & 63];
      t = attr_from<B>(v);
      return t;
    } else {
      return attr_from<B>(v);
    }
  }
}

template <class R, class... A, size_t... I>
MSLEMU_AI void invoke_(R (*f)(A...), const ParamDesc* d, std::index_sequence<I...>) { f(bind<A>(d[I])...); }
template <class R, class... A> MSLEMU_AI void invoke(R (*f)(A...), const ParamDesc* d) {
  invoke_(f, d, std::index_sequence_for<A...>{});
}
}  // namespace mslemu

#include "mslemu_param_info.h"
