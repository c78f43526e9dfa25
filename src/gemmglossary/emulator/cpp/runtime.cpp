// gemmglossary Metal emulator runtime: fibers, per-threadgroup scheduler, barriers,
// simd-group rendezvous, diagnostics and process isolation. Original code.
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dlfcn.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <string>
#include <vector>

#include "mslemu_rt.h"

#if (!defined(__x86_64__) && !defined(__aarch64__)) || defined(MSLEMU_FORCE_UCONTEXT)
#include <ucontext.h>
#define MSLEMU_UCONTEXT 1
#endif

namespace mslemu {
Ctx ctx;
alignas(64) char zero_block[4096];
}  // namespace mslemu

using namespace mslemu;

extern "C" {
struct MslemuResult {
  int32_t status;
  int32_t warn;
  int32_t sig;
  int32_t pad;
  char msg[16384];
  char warn_msg[2048];
  char oob_msg[4096];
  int64_t err_tg;
  char uninit_msg[2048];  // linear index of the threadgroup that failed (-1: none / outside one)
};

struct MslemuLaunch {
  uint32_t ntg[3];
  uint32_t grid[3];
  uint32_t tptg[3];
  int32_t dispatch_threads;
  int32_t schedule;
  uint64_t seed;
  double timeout;
  int32_t race_check;
  int32_t isolate;
  void* buf[32];
  uint64_t buf_size[32];
  const char* buf_name[32];
  uint64_t tgm_size[32];
  void (*entry)(void);
  MslemuResult* result;
  int32_t oob_reads;
  int32_t workers;
};
}

// ------------------------------------------------------------------ context switch
#if defined(MSLEMU_UCONTEXT)
// context switches through ucontext (portable, slower: a system call per switch)
#elif defined(__x86_64__)
extern "C" void mslemu_switch(void** save, void* to);
asm(R"(
.text
.globl mslemu_switch
.hidden mslemu_switch
.type mslemu_switch,@function
mslemu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
.size mslemu_switch,.-mslemu_switch
)");
#elif defined(__aarch64__)
extern "C" void mslemu_switch(void** save, void* to);
#if defined(__APPLE__)
#define MSLEMU_SYM "_mslemu_switch"
#else
#define MSLEMU_SYM "mslemu_switch"
#endif
asm(".text\n.globl " MSLEMU_SYM "\n.p2align 2\n" MSLEMU_SYM ":\n"
    "  sub sp, sp, #176\n"
    "  stp x19, x20, [sp, #0]\n  stp x21, x22, [sp, #16]\n  stp x23, x24, [sp, #32]\n"
    "  stp x25, x26, [sp, #48]\n  stp x27, x28, [sp, #64]\n  stp x29, x30, [sp, #80]\n"
    "  stp d8, d9, [sp, #96]\n  stp d10, d11, [sp, #112]\n  stp d12, d13, [sp, #128]\n  stp d14, d15, [sp, #144]\n"
    "  mov x9, sp\n  str x9, [x0]\n  mov sp, x1\n"
    "  ldp x19, x20, [sp, #0]\n  ldp x21, x22, [sp, #16]\n  ldp x23, x24, [sp, #32]\n"
    "  ldp x25, x26, [sp, #48]\n  ldp x27, x28, [sp, #64]\n  ldp x29, x30, [sp, #80]\n"
    "  ldp d8, d9, [sp, #96]\n  ldp d10, d11, [sp, #112]\n  ldp d12, d13, [sp, #128]\n  ldp d14, d15, [sp, #144]\n"
    "  add sp, sp, #176\n  ret\n");
#endif

// ---- the state of this process's run (one threadgroup at a time)
static const size_t FIBER_STACK_BYTES = 256 * 1024;
static const size_t STACK_GUARD_BYTES = 4096;  // a PROT_NONE page below each stack catches overflows
static char* fiber_stacks;        // one stack + guard per thread of the largest threadgroup
static size_t fiber_stack_count;
static Fiber* fibers;             // the threads of the threadgroup being run, by thread_index_in_threadgroup
static uint32_t tg_threads;       // how many: edge threadgroups of dispatchThreads are smaller
static void* sched_sp;            // the scheduler's saved stack pointer
static uint32_t live_threads;     // threads of the threadgroup that have not returned
static uint32_t barrier_arrivals; // live threads waiting at a threadgroup_barrier
struct SimdgroupCount { uint32_t live, arrived; };  // lanes not yet returned; lanes waiting at a simd-group op
static SimdgroupCount sg_count[32];
static MslemuLaunch* launch;      // the caller's launch description
static MslemuResult* result;      // where this process reports (each worker has its own)
static uint64_t schedule_rng;     // xorshift state of the random schedule, seeded per threadgroup
static uint32_t lockstep_cursor;  // next thread to run in the lockstep schedule
static int worker_index = 0, worker_count = 1;  // this process runs threadgroups worker_index, +worker_count, ...
static uintptr_t so_base;         // load address of the kernel's shared object: reported PCs are offsets from it
#ifdef MSLEMU_UCONTEXT
static std::vector<ucontext_t> uctx;
static ucontext_t sched_uc;
#endif

struct TgRegion { char* p; uint64_t size; const char* name; uint32_t esize, nd, dims[4]; };
static TgRegion tg_regions[128];
static int tg_region_count;

static std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
static std::string fmt(const char* f, ...) {
  char b[4096];
  va_list ap; va_start(ap, f); vsnprintf(b, sizeof b, f, ap); va_end(ap);
  return b;
}
static std::string pcs(const void* pc) { return fmt("{{pc:%lx}}", (unsigned long)((uintptr_t)pc - so_base)); }
static std::string tg_str() { return fmt("threadgroup (%u,%u,%u)", ctx.tg_pos[0], ctx.tg_pos[1], ctx.tg_pos[2]); }
static std::string th_str(const Fiber* f) {
  return fmt("thread (%u,%u,%u) [index %u, simdgroup %u lane %u]", f->pos[0], f->pos[1], f->pos[2], f->tid, f->sg, f->lane);
}

[[noreturn]] static void finish(int kind, const std::string& m) {
  result->status = kind;
  snprintf(result->msg, sizeof result->msg, "%s", m.c_str());
  if (launch->isolate) _exit(kind);
  // in-process mode (debugging only): abort the whole run
  fprintf(stderr, "%s\n", m.c_str());
  _exit(kind);
}

[[noreturn]] void mslemu::fail(int kind, const char* f, ...) {
  char b[8192];
  va_list ap; va_start(ap, f); vsnprintf(b, sizeof b, f, ap); va_end(ap);
  std::string m = b;
  if (ctx.cur) m += " (in " + tg_str() + ", " + th_str(ctx.cur) + ")";
  finish(kind, m);
}

static const char* op_name(int op) {
  static const char* names[] = {"?", "simd_sum", "simd_product", "simd_max", "simd_min", "simd_shuffle", "simd_shuffle_xor",
                                "simd_shuffle_up", "simd_shuffle_down", "simd_broadcast", "simd_broadcast_first",
                                "simd_prefix_exclusive_sum", "simd_prefix_inclusive_sum", "simd_all", "simd_any",
                                "simdgroup matrix multiply", "simd_and", "simd_or", "simd_xor", "simd_shuffle_rotate_down",
                                "simd_shuffle_rotate_up", "simd_is_first"};
  if (op == 100) return "simdgroup_barrier";
  if (op > 0 && op < (int)(sizeof names / sizeof *names)) return names[op];
  return "simd-group function";
}

static std::string id_list(const std::vector<uint32_t>& ids) {
  std::string s;
  size_t i = 0;
  int shown = 0;
  while (i < ids.size()) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!s.empty()) s += ",";
    if (shown++ > 6) { s += "..."; break; }
    s += j > i ? fmt("%u-%u", ids[i], ids[j]) : fmt("%u", ids[i]);
    i = j + 1;
  }
  return s;
}

static std::string site(const char* file, int line) { return fmt("%s:%d", file ? file : "?", line); }

// group waiting fibers by what they wait at
static std::string describe_waiting(int sg_only) {
  struct Grp { int state; const char* file; int line; int op; std::vector<uint32_t> ids; };
  std::vector<Grp> gs;
  for (uint32_t i = 0; i < tg_threads; ++i) {
    Fiber* f = &fibers[i];
    if (sg_only >= 0 && (int)f->sg != sg_only) continue;
    Grp* gp = nullptr;
    for (auto& x : gs)
      if (x.state == f->state && (f->state == F_DONE || f->state == F_READY ||
                                  (x.line == f->wline && x.op == f->wop && x.file && f->wfile && !strcmp(x.file, f->wfile)))) {
        gp = &x; break;
      }
    if (!gp) { gs.push_back({f->state, f->wfile, f->wline, f->wop, {}}); gp = &gs.back(); }
    gp->ids.push_back(f->tid);
  }
  std::string s;
  for (auto& x : gs) {
    s += "\n  threads " + id_list(x.ids) + ": ";
    if (x.state == F_BARRIER) s += "waiting at threadgroup_barrier at " + site(x.file, x.line);
    else if (x.state == F_SIMD) s += fmt("waiting at %s at ", op_name(x.op)) + site(x.file, x.line);
    else if (x.state == F_DONE) s += "returned";
    else s += "runnable";
  }
  return s;
}

// ------------------------------------------------------------------ barriers and rendezvous
static Fiber* pick();
static void yield_() {
#ifdef MSLEMU_UCONTEXT
  swapcontext(&uctx[ctx.cur->tid], &sched_uc);
#else
  Fiber* me = ctx.cur;
  Fiber* nx;
  if (launch->schedule == 0 && lockstep_cursor < tg_threads && fibers[lockstep_cursor].state == F_READY) {  // lockstep fast path
    nx = &fibers[lockstep_cursor];
    lockstep_cursor = lockstep_cursor + 1 == tg_threads ? 0 : lockstep_cursor + 1;
  } else {
    nx = pick();
  }
  if (nx && nx != me) {  // hand over directly, skipping the scheduler
    ctx.cur = nx;
    mslemu_switch(&me->sp, nx->sp);
    ctx.cur = me;
  } else {
    mslemu_switch(&me->sp, sched_sp);
  }
#endif
}

static void release_barrier() {
  Fiber* first = nullptr;
  int flags = 0;
  for (uint32_t i = 0; i < tg_threads; ++i) {
    Fiber* f = &fibers[i];
    if (f->state != F_BARRIER) continue;
    flags |= f->wop;
    if (!first) { first = f; continue; }
    if (f->wline != first->wline || (f->wfile != first->wfile && strcmp(f->wfile, first->wfile))) {
      ctx.cur = nullptr;
      finish(E_BARRIER, "threadgroup_barrier divergence in " + tg_str() + ": live threads wait at different barriers (" +
                            site(first->wfile, first->wline) + " and " + site(f->wfile, f->wline) +
                            "); every live thread of a threadgroup must reach the same barrier:" + describe_waiting(-1));
    }
  }
  if (live_threads < tg_threads && !result->warn) {
    result->warn = 1;
    std::vector<uint32_t> done;
    for (uint32_t i = 0; i < tg_threads; ++i) if (fibers[i].state == F_DONE) done.push_back(i);
    snprintf(result->warn_msg, sizeof result->warn_msg,
             "threads %s of %s returned before the threadgroup_barrier at %s; Apple GPUs let returned threads skip "
             "barriers, but the Metal specification requires every thread to reach them (not portable)",
             id_list(done).c_str(), tg_str().c_str(), site(first->wfile, first->wline).c_str());
  }
  if (flags & 2) { ctx.tg_sync = ++ctx.clock; }
  for (uint32_t i = 0; i < tg_threads; ++i) if (fibers[i].state == F_BARRIER) fibers[i].state = F_READY;
  barrier_arrivals = 0;
}

void mslemu::barrier(int flags, const char* file, int line) {
  Fiber* f = ctx.cur;
  if (f->nq) mma_flush(file, line);
  f->state = F_BARRIER; f->wfile = file; f->wline = line; f->wop = flags;
  if (++barrier_arrivals == live_threads) release_barrier();
  else yield_();
  f->state = F_READY;
}

static void complete_sg(uint32_t sg) {
  Fiber* L[32];
  uint32_t base = sg * 32, n = tg_threads - base < 32 ? tg_threads - base : 32;
  if (sg_count[sg].live == n) {  // fast path: the whole simdgroup is live and waiting here
    Fiber* f0 = &fibers[base];
    bool same = true;
    for (uint32_t i = 0; i < n; ++i) {
      Fiber* f = f0 + i;
      L[i] = f;
      same &= (f->wop == f0->wop) & (f->wline == f0->wline) & (f->wfile == f0->wfile);
    }
    if (same) {
      if (f0->wop != 100) ((CombineFn)f0->cextra)(f0->wop, L, (int)n);
      else ctx.sg_sync[sg] = ++ctx.clock;
      for (uint32_t i = 0; i < n; ++i) f0[i].state = F_READY;
      sg_count[sg].arrived = 0;
      return;
    }
  }
  for (uint32_t i = 0; i < 32; ++i) L[i] = nullptr;
  Fiber* first = nullptr;
  for (uint32_t i = 0; i < n; ++i) {
    Fiber* f = &fibers[base + i];
    if (f->state != F_SIMD) continue;
    if (!first) first = f;
    else if (f->wop != first->wop || f->wline != first->wline || (f->wfile != first->wfile && strcmp(f->wfile, first->wfile))) {
      ctx.cur = nullptr;
      finish(E_DIVERGE, fmt("simdgroup divergence in %s, simdgroup %u: lanes reach different simd-group operations "
                            "(%s at %s and %s at %s); all active lanes must execute the same one:",
                            tg_str().c_str(), sg, op_name(first->wop), site(first->wfile, first->wline).c_str(),
                            op_name(f->wop), site(f->wfile, f->wline).c_str()) + describe_waiting(sg));
    }
    L[i] = f;
  }
  if (first->wop != 100) ((CombineFn)first->cextra)(first->wop, L, (int)n);
  else ctx.sg_sync[sg] = ++ctx.clock;
  for (uint32_t i = 0; i < n; ++i) if (L[i]) L[i]->state = F_READY;
  sg_count[sg].arrived = 0;
}

void mslemu::collective(int op, const char* file, int line, CombineFn fn) {
  Fiber* f = ctx.cur;
  if (f->nq && op != 15) mma_flush(file, line);
  f->state = F_SIMD; f->wfile = file; f->wline = line; f->wop = op; f->cextra = (const void*)fn;
  if (++sg_count[f->sg].arrived == sg_count[f->sg].live) complete_sg(f->sg);
  else yield_();
  f->state = F_READY;
}

void mslemu::simd_barrier(const char* file, int line) { collective(100, file, line, nullptr); }

// ------------------------------------------------------------------ deferred simdgroup multiplies
static const int OP_MMA = 15;

typedef float v8f __attribute__((vector_size(32)));
#if defined(__x86_64__) && defined(__linux__)
__attribute__((target_clones("avx2", "default")))
#endif
static void mm8(const float (*A)[8], const float (*B)[8], const float (*C)[8], float (*D)[8]) {
  v8f b[8];
  memcpy(b, B, sizeof b);
  for (int r = 0; r < 8; ++r) {
    v8f acc;
    memcpy(&acc, C[r], sizeof acc);
    for (int j = 0; j < 8; ++j) acc += A[r][j] * b[j];
    memcpy(D[r], &acc, sizeof acc);
  }
}

static const unsigned char FRAGMENT_ROW[32] = {0,0,1,1,2,2,3,3,0,0,1,1,2,2,3,3,4,4,5,5,6,6,7,7,4,4,5,5,6,6,7,7};
static const unsigned char FRAGMENT_COL[32] = {0,2,0,2,0,2,0,2,4,6,4,6,4,6,4,6,0,2,0,2,0,2,0,2,4,6,4,6,4,6,4,6};


static float mma_results[MMA_QCAP][8][8];  // results of the queued multiplies, row-major

static void round_matrix(float (*D)[8], int td) {
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c) {
      if (td == 1) D[r][c] = f16_bits_to_f32(f32_to_f16_bits(D[r][c]));
      else if (td == 2) D[r][c] = bf16_bits_to_f32(f32_to_bf16_bits(D[r][c]));
    }
}

static void flush_combine(int, Fiber** L, int n) {
  int first = -1;
  for (int i = 0; i < n; ++i) if (L[i]) { first = i; break; }
  Fiber* f0 = L[first];
  uint32_t sg = f0->sg;
  int nq = f0->nq;
  for (int i = 0; i < n; ++i)
    if (L[i] && L[i]->nq != nq) {
      int k = nq < L[i]->nq ? nq : L[i]->nq;
      Fiber* longer = nq > L[i]->nq ? f0 : L[i];
      const LaneOp& o = qop(sg, k, longer->lane);
      ctx.cur = nullptr;
      finish(E_DIVERGE, fmt("simdgroup divergence in %s, simdgroup %u: lane %d performed %d simdgroup matrix multiplies "
                            "but lane %d performed %d (the next one is at %s); simdgroup_matrix operations need "
                            "uniform control flow in the simdgroup", tg_str().c_str(), sg, f0->lane, nq, L[i]->lane,
                            L[i]->nq, site(o.file, o.line).c_str()));
    }
  float A[8][8], B[8][8], C[8][8];
  bool full = n == 32;
  for (int i = 0; i < n; ++i) full = full && L[i];
  // every lane hashed the sites and operand sources of its queue: equal hashes (the
  // uniform case) skip the per-multiply comparison of the lanes
  bool same_hash = full;
  for (int i = 1; i < n && same_hash; ++i) same_hash = L[i]->qhash == L[0]->qhash;
  for (int q = 0; q < nq; ++q) {
    const LaneOp* ops = &qop(sg, q, 0);
    const LaneOp& o0 = ops[first];
    // operands produced by an earlier queued multiply (the same one on every lane, in
    // uniform control flow) are copied as whole matrices
    bool uni[3] = {true, true, true};
    bool same_td = true;
    for (int i = 0; i < n && !same_hash; ++i) {
      if (!L[i]) continue;
      const LaneOp& o = ops[i];
      if (o.line != o0.line || (o.file != o0.file && strcmp(o.file, o0.file))) {
        ctx.cur = nullptr;
        finish(E_DIVERGE, fmt("simdgroup divergence in %s, simdgroup %u: lane %d multiplies at %s while lane %d multiplies "
                              "at %s; simdgroup_matrix operations need uniform control flow in the simdgroup",
                              tg_str().c_str(), sg, first, site(o0.file, o0.line).c_str(), i, site(o.file, o.line).c_str()));
      }
      for (int k = 0; k < 3; ++k) uni[k] = uni[k] && o.dep[k] == o0.dep[k];
      same_td = same_td && o.td == o0.td;
    }
    float (*M[3])[8] = {A, B, C};
    for (int k = 0; k < 3; ++k) {
      float (*X)[8] = M[k];
      if (full && uni[k] && o0.dep[k] >= 0) {
        memcpy(X, mma_results[o0.dep[k]], sizeof A);
      } else if (full && uni[k]) {  // fresh operands staged by every lane
        for (int i = 0; i < 32; ++i) {
          int rr = FRAGMENT_ROW[i], cc = FRAGMENT_COL[i];
          X[rr][cc] = ops[i].in[2 * k];
          X[rr][cc + 1] = ops[i].in[2 * k + 1];
        }
      } else {
        memset(X, 0, sizeof A);
        for (int i = 0; i < n; ++i) {
          if (!L[i]) continue;
          const LaneOp& o = ops[i];
          int rr = FRAGMENT_ROW[i], cc = FRAGMENT_COL[i];
          if (o.dep[k] >= 0) {
            X[rr][cc] = mma_results[o.dep[k]][rr][cc];
            X[rr][cc + 1] = mma_results[o.dep[k]][rr][cc + 1];
          } else {
            X[rr][cc] = o.in[2 * k];
            X[rr][cc + 1] = o.in[2 * k + 1];
          }
        }
      }
    }
    mm8(A, B, C, mma_results[q]);
    // results are rounded to the destination type, as a register of that type would be
    if (same_td) {
      if (o0.td) round_matrix(mma_results[q], o0.td);
    } else {
      round_matrix(mma_results[q], 1);  // mixed destination types across lanes cannot happen in uniform code
    }
  }
  for (int q = 0; q < nq; ++q) {
    LaneOp* ops = &qop(sg, q, 0);
    for (int i = 0; i < n; ++i) {
      LaneOp& o = ops[i];
      if (!L[i] || !o.reg_e) continue;
      int rr = FRAGMENT_ROW[i], cc = FRAGMENT_COL[i];
      float v0 = mma_results[q][rr][cc], v1 = mma_results[q][rr][cc + 1];
      if (o.td == 0) { ((float*)o.reg_e)[0] = v0; ((float*)o.reg_e)[1] = v1; }
      else if (o.td == 1) { ((uint16_t*)o.reg_e)[0] = f32_to_f16_bits(v0); ((uint16_t*)o.reg_e)[1] = f32_to_f16_bits(v1); }
      else { ((uint16_t*)o.reg_e)[0] = f32_to_bf16_bits(v0); ((uint16_t*)o.reg_e)[1] = f32_to_bf16_bits(v1); }
      *o.reg_pend = -1;
      o.reg_e = nullptr; o.reg_pend = nullptr;
    }
  }
  for (int i = 0; i < n; ++i) if (L[i]) { L[i]->nq = 0; L[i]->qhash = 0; }
}

void mslemu::mma_flush(const char* file, int line) {
  if (!ctx.cur->nq) return;
  collective(OP_MMA, file ? file : "?", line, &flush_combine);
}

// ------------------------------------------------------------------ memory
void* mslemu::tg_alloc(uint64_t bytes, uint64_t align, const char* name, uint32_t esize, uint32_t nd,
                       const uint32_t* dims) {
  uint64_t off = (ctx.arena_used + align - 1) / align * align;
  if (off + bytes > 32768)
    fail(E_LAUNCH, "threadgroup memory exhausted: '%s' needs %llu bytes at offset %llu, but Apple GPUs provide 32768 bytes per threadgroup",
         name, (unsigned long long)bytes, (unsigned long long)off);
  ctx.arena_used = off + bytes;
  if (tg_region_count < 128) {
    TgRegion& rg = tg_regions[tg_region_count++];
    rg.p = ctx.arena + off; rg.size = bytes; rg.name = name; rg.esize = esize; rg.nd = nd > 4 ? 0 : nd;
    for (uint32_t k = 0; k < rg.nd; ++k) rg.dims[k] = dims[k];
  }
  return ctx.arena + off;
}

// "tile[3][5]" for a byte offset into a threadgroup array (or "'name' (byte offset N)")
static std::string tg_element(const void* p) {
  const char* c = (const char*)p;
  for (int i = 0; i < tg_region_count; ++i) {
    const TgRegion& rg = tg_regions[i];
    if (c < rg.p || c >= rg.p + rg.size) continue;
    uint64_t off = (uint64_t)(c - rg.p);
    if (rg.esize && rg.nd) {
      uint64_t e = off / rg.esize;
      std::string idx;
      for (int k = (int)rg.nd - 1; k >= 0; --k) {
        idx = fmt("[%llu]", (unsigned long long)(e % rg.dims[k])) + idx;
        e /= rg.dims[k];
      }
      return fmt("'%s%s'", rg.name, idx.c_str());
    }
    if (rg.esize && rg.size == rg.esize) return fmt("'%s'", rg.name);
    return fmt("'%s' (byte offset %llu)", rg.name, (unsigned long long)off);
  }
  return "(unknown threadgroup memory)";
}

const char* mslemu::buffer_name_for(const void* p, const void** lo, const void** hi) {
  const char* c = (const char*)p;
  for (int strict = 1; strict >= 0; --strict) {
    for (int i = 0; i < tg_region_count; ++i) {
      const char* e = tg_regions[i].p + tg_regions[i].size;
      if (c >= tg_regions[i].p && (strict ? c < e : c <= e)) {
        *lo = tg_regions[i].p; *hi = e;
        return tg_regions[i].name;
      }
    }
    for (int i = 0; i < 32; ++i) {
      const char* b = (const char*)ctx.buf[i];
      if (!b) continue;
      const char* e = b + ctx.buf_size[i];
      if (c >= b && (strict ? c < e : c <= e)) {
        *lo = b; *hi = e;
        return ctx.buf_name[i];
      }
    }
  }
  *lo = *hi = nullptr;
  return "memory outside every buffer";
}

alignas(64) static char poison[4096];

void* mslemu::oob(const void* pc, const void* p, const void* lo, const void* hi, size_t elem, const char* name, int) {
  std::string m;
  if (!lo && !hi) {
    m = fmt("invalid memory access: address %p is not inside any bound buffer ('%s') at ", p, name) + pcs(pc);
  } else {
    long long idx = ((const char*)p - (const char*)lo);
    long long n = ((const char*)hi - (const char*)lo) / (long long)elem;
    if (idx >= 0) idx /= (long long)elem; else idx = -((-idx + (long long)elem - 1) / (long long)elem);
    m = fmt("out-of-bounds access to '%s': element index %lld is outside the valid range [0, %lld) (%zu-byte elements) at ",
            name, idx, n, elem) + pcs(pc);
  }
  m += " in " + tg_str() + ", " + th_str(ctx.cur);
  if (ctx.oob_lenient && elem <= sizeof poison) {
    // reads outside a buffer give zeros; a write is caught when the run ends
    if (!result->oob_msg[0]) snprintf(result->oob_msg, sizeof result->oob_msg, "%s", m.c_str());
    return poison;
  }
  finish(E_OOB, m);
}

void mslemu::race(int kind, const void* p, const void* pc_now, uint32_t other, uint32_t pc_other_off) {
  const void* pc_other = (const void*)(ctx.pc_base + pc_other_off);
  Fiber* me = ctx.cur;
  Fiber* o = &fibers[other];
  const char* what = kind == 1 ? "reads" : "writes";
  const char* other_what = kind == 3 ? "read" : "wrote";
  std::string m = fmt("data race on threadgroup memory %s in %s: ", tg_element(p).c_str(), tg_str().c_str());
  m += th_str(me) + " " + what + " it at " + pcs(pc_now) + ", but " + th_str(o) + " " + other_what + " it at " +
       pcs(pc_other) + " with no threadgroup_barrier(mem_flags::mem_threadgroup) in between";
  finish(E_RACE, m);
}

void mslemu::uninit_read(const void* p, const void* pc) {
  static uint64_t reported_gen = 0;
  if (result->uninit_msg[0] || reported_gen == ctx.tg_gen + 1) return;
  reported_gen = ctx.tg_gen + 1;
  std::string m = fmt("%s reads threadgroup memory %s at ", th_str(ctx.cur).c_str(), tg_element(p).c_str()) + pcs(pc) +
                  " in " + tg_str() +
                  " before any thread of the threadgroup wrote it; threadgroup memory starts with undefined contents "
                  "on a GPU (the emulator gives 0)";
  snprintf(result->uninit_msg, sizeof result->uninit_msg, "%s", m.c_str());
}

// ------------------------------------------------------------------ scheduler
static void fiber_main() {
  launch->entry();
  if (ctx.cur->nq) mma_flush("(thread exit)", 0);
  Fiber* f = ctx.cur;
  f->state = F_DONE;
  --live_threads;
  SimdgroupCount& s = sg_count[f->sg];
  --s.live;
  if (s.live && s.arrived == s.live) complete_sg(f->sg);
  if (live_threads && barrier_arrivals == live_threads) release_barrier();
#ifdef MSLEMU_UCONTEXT
  setcontext(&sched_uc);
#else
  void* dummy;
  mslemu_switch(&dummy, sched_sp);
#endif
  __builtin_unreachable();
}

static Fiber* pick() {
  if (launch->schedule == 0) {
    for (uint32_t k = 0; k < tg_threads; ++k) {
      uint32_t i = lockstep_cursor + k;
      if (i >= tg_threads) i -= tg_threads;
      if (fibers[i].state == F_READY) { lockstep_cursor = i + 1 == tg_threads ? 0 : i + 1; return &fibers[i]; }
    }
    return nullptr;
  }
  if (launch->schedule == 1) {  // simdgroup-major: lowest ready thread index
    for (uint32_t i = 0; i < tg_threads; ++i) if (fibers[i].state == F_READY) return &fibers[i];
    return nullptr;
  }
  uint32_t cnt = 0;
  for (uint32_t i = 0; i < tg_threads; ++i) cnt += fibers[i].state == F_READY;
  if (!cnt) return nullptr;
  schedule_rng ^= schedule_rng << 13; schedule_rng ^= schedule_rng >> 7; schedule_rng ^= schedule_rng << 17;
  uint32_t k = (uint32_t)(schedule_rng % cnt);
  for (uint32_t i = 0; i < tg_threads; ++i)
    if (fibers[i].state == F_READY && k-- == 0) return &fibers[i];
  return nullptr;
}

[[noreturn]] static void deadlock() {
  ctx.cur = nullptr;
  // a simdgroup whose live_threads lanes are split between a simd-group op and something else
  for (uint32_t sg = 0; sg < ctx.nsg; ++sg) {
    uint32_t base = sg * 32, n = tg_threads - base < 32 ? tg_threads - base : 32;
    bool simd = false, other = false;
    const Fiber* fs = nullptr;
    for (uint32_t i = 0; i < n; ++i) {
      const Fiber& f = fibers[base + i];
      if (f.state == F_SIMD) { simd = true; fs = &f; }
      else if (f.state != F_DONE) other = true;
    }
    if (simd && other) {
      std::string what = fmt("%s at %s", op_name(fs->wop), site(fs->wfile, fs->wline).c_str());
      if (fs->wop == 15 && fs->nq > 0) {  // a deferred multiply: name where it was issued
        const LaneOp& o = qop(sg, 0, fs->lane);
        what = fmt("the simdgroup matrix multiply at %s (its result needed at %s)", site(o.file, o.line).c_str(),
                   site(fs->wfile, fs->wline).c_str());
      }
      finish(E_DIVERGE, fmt("simdgroup divergence in %s, simdgroup %u: %s is reached by only part of the live lanes "
                            "of the simdgroup (simd-group functions and simdgroup_matrix operations need every active lane):",
                            tg_str().c_str(), sg, what.c_str()) + describe_waiting(sg));
    }
  }
  finish(E_BARRIER, "deadlock in " + tg_str() + ": a threadgroup_barrier is never reached by all live threads:" +
                        describe_waiting(-1));
}

static void run_threadgroup(uint32_t tx, uint32_t ty, uint32_t tz) {
  ctx.tg_pos[0] = tx; ctx.tg_pos[1] = ty; ctx.tg_pos[2] = tz;
  // the random schedule is seeded per threadgroup, so it does not depend on the workers
  uint64_t lin = ((uint64_t)tz * launch->ntg[1] + ty) * launch->ntg[0] + tx;
  schedule_rng = (launch->seed + 1) * 0x9E3779B97F4A7C15ull ^ (lin + 1) * 0xBF58476D1CE4E5B9ull;
  if (!schedule_rng) schedule_rng = 88172645463325252ull;
  uint32_t n[3];
  for (int i = 0; i < 3; ++i) {
    n[i] = launch->tptg[i];
    if (launch->dispatch_threads) {
      uint32_t start = ctx.tg_pos[i] * launch->tptg[i];
      if (start + n[i] > launch->grid[i]) n[i] = launch->grid[i] - start;
    }
    ctx.tptg[i] = n[i];
  }
  tg_threads = n[0] * n[1] * n[2];
  ctx.nthreads = tg_threads;
  ctx.nsg = (tg_threads + 31) / 32;
  ++ctx.tg_gen;
  ctx.arena_used = 0;
  tg_region_count = 0;
  for (int i = 0; i < 32; ++i) {
    if (launch->tgm_size[i]) ctx.tgm[i] = tg_alloc(launch->tgm_size[i], 16, "threadgroup buffer");
    else ctx.tgm[i] = nullptr;
    ctx.tgm_size[i] = launch->tgm_size[i];
  }
  memset(ctx.arena, 0, 32768);
  ctx.tg_sync = ++ctx.clock;
  ctx.tg_start = ctx.clock;
  for (int i = 0; i < 32; ++i) ctx.sg_sync[i] = ctx.clock;
  live_threads = tg_threads; barrier_arrivals = 0; lockstep_cursor = 0;
  for (uint32_t s = 0; s < ctx.nsg; ++s) { sg_count[s].live = tg_threads - s * 32 < 32 ? tg_threads - s * 32 : 32; sg_count[s].arrived = 0; }
  for (uint32_t i = 0; i < tg_threads; ++i) {
    Fiber* f = &fibers[i];
    memset(f, 0, sizeof *f);
    f->tid = i; f->lane = i % 32; f->sg = i / 32;
    f->pos[0] = i % n[0]; f->pos[1] = (i / n[0]) % n[1]; f->pos[2] = i / (n[0] * n[1]);
    f->state = F_READY;
    // stagger the stack tops so the fibers' hot frames do not all map to one cache set
    char* top = fiber_stacks + (size_t)(i + 1) * (FIBER_STACK_BYTES + STACK_GUARD_BYTES) - (size_t)((i * 7) % 64) * 64;
#if defined(MSLEMU_UCONTEXT)
    getcontext(&uctx[i]);
    uctx[i].uc_stack.ss_sp = top - FIBER_STACK_BYTES + 4096;
    uctx[i].uc_stack.ss_size = FIBER_STACK_BYTES - 4096;
    uctx[i].uc_link = nullptr;
    makecontext(&uctx[i], (void (*)())fiber_main, 0);
#elif defined(__x86_64__)
    void** sp = (void**)top;
    *--sp = nullptr;
    *--sp = (void*)&fiber_main;
    for (int k = 0; k < 6; ++k) *--sp = nullptr;
    f->sp = sp;
#elif defined(__aarch64__)
    void** sp = (void**)(top - 176);
    memset(sp, 0, 176);
    sp[11] = (void*)&fiber_main;
    f->sp = sp;
#else
    getcontext(&uctx[i]);
    uctx[i].uc_stack.ss_sp = top - FIBER_STACK_BYTES;
    uctx[i].uc_stack.ss_size = FIBER_STACK_BYTES;
    uctx[i].uc_link = nullptr;
    makecontext(&uctx[i], (void (*)())fiber_main, 0);
#endif
  }
  for (;;) {
    Fiber* f = pick();
    if (!f) {
      if (live_threads == 0) break;
      deadlock();
    }
    ctx.cur = f;
#ifdef MSLEMU_UCONTEXT
    swapcontext(&sched_uc, &uctx[f->tid]);
#else
    mslemu_switch(&sched_sp, f->sp);
#endif
  }
  ctx.cur = nullptr;
}

// ------------------------------------------------------------------ signals
static void on_signal(int sig, siginfo_t* si, void* uc_) {
  ucontext_t* uc = (ucontext_t*)uc_;
  uintptr_t pc = 0;
#if defined(__x86_64__) && defined(__linux__)
  pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__) && defined(__linux__)
  pc = (uintptr_t)uc->uc_mcontext.pc;
#endif
  (void)uc;
  std::string m;
  if (sig == SIGALRM) {
    m = fmt("timeout: the kernel did not finish within %g s (infinite loop or a very large launch?)", launch->timeout);
    if (ctx.cur) m += "; " + th_str(ctx.cur) + " of " + tg_str() + " was running at " + pcs((void*)pc);
    if (fibers && tg_threads) m += "; threads:" + describe_waiting(-1);
    result->sig = sig;
    finish(E_TIMEOUT, m);
  }
  const char* name = sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : sig == SIGFPE ? "SIGFPE"
                   : sig == SIGILL ? "SIGILL" : sig == SIGABRT ? "SIGABRT" : sig == SIGTRAP ? "SIGTRAP" : "signal";
  m = fmt("kernel crashed with %s", name);
  char* a = (char*)si->si_addr;
  if (sig == SIGSEGV && fiber_stacks && a >= fiber_stacks - (1 << 20) && a < fiber_stacks + fiber_stack_count * (FIBER_STACK_BYTES + STACK_GUARD_BYTES) &&
      (a < fiber_stacks || ((size_t)(a - fiber_stacks) % (FIBER_STACK_BYTES + STACK_GUARD_BYTES)) < STACK_GUARD_BYTES))
    m += fmt(" (stack overflow of a GPU thread: its %zu KiB stack is full; a thread-local array that large "
             "would not fit in a GPU thread's registers or stack either)", FIBER_STACK_BYTES / 1024);
  else if (sig == SIGSEGV || sig == SIGBUS)
    m += fmt(" (invalid address %p)", si->si_addr);
  if (pc) m += " at " + pcs((void*)pc);
  if (ctx.cur) m += " in " + tg_str() + ", " + th_str(ctx.cur);
  result->sig = sig;
  finish(E_CRASH, m);
}

static void install_handlers() {
  static char altstack[65536];
  stack_t ss{};
  ss.ss_sp = altstack; ss.ss_size = sizeof altstack;
  sigaltstack(&ss, nullptr);
  struct sigaction sa{};
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  for (int s : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGALRM}) sigaction(s, &sa, nullptr);
  if (launch->isolate) {  // Ctrl-C ends the worker processes (the caller then sees KeyboardInterrupt)
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
  }
  if (launch->timeout > 0) {
    struct itimerval it{};
    it.it_value.tv_sec = (long)launch->timeout;
    it.it_value.tv_usec = (long)((launch->timeout - (long)launch->timeout) * 1e6);
    setitimer(ITIMER_REAL, &it, nullptr);
  }
}

static void* zalloc(size_t n) {
  void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) finish(E_GENERIC, "out of memory");
  return p;
}

static int run_all() {
  install_handlers();
  uint32_t maxn = launch->tptg[0] * launch->tptg[1] * launch->tptg[2];
  fiber_stack_count = maxn;
  fiber_stacks = (char*)mmap(nullptr, maxn * (FIBER_STACK_BYTES + STACK_GUARD_BYTES), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (fiber_stacks == MAP_FAILED) finish(E_GENERIC, "cannot allocate fiber stacks");
  for (uint32_t i = 0; i < maxn; ++i) mprotect(fiber_stacks + (size_t)i * (FIBER_STACK_BYTES + STACK_GUARD_BYTES), STACK_GUARD_BYTES, PROT_NONE);
  fibers = (Fiber*)zalloc(maxn * sizeof(Fiber));
  ctx.mmaq = (LaneOp*)zalloc((size_t)((maxn + 31) / 32) * MMA_QCAP * 32 * sizeof(LaneOp));
#ifdef MSLEMU_UCONTEXT
  uctx.resize(maxn);
#endif
  ctx.arena = (char*)zalloc(65536);
  ctx.arena_size = 32768;
  ctx.shadow = zalloc((32768 / 2 + 8) * sizeof(Shadow));
  ctx.race_check = launch->race_check;
  ctx.pc_base = so_base;
  ctx.oob_lenient = launch->oob_reads;
  ctx.clock = 1;
  for (int i = 0; i < 32; ++i) {
    ctx.buf[i] = launch->buf[i]; ctx.buf_size[i] = launch->buf_size[i]; ctx.buf_name[i] = launch->buf_name[i];
  }
  for (int i = 0; i < 3; ++i) {
    ctx.max_tptg[i] = launch->tptg[i];
    ctx.tgs_per_grid[i] = launch->ntg[i];
    ctx.threads_per_grid[i] = launch->grid[i];
    ctx.grid_origin[i] = 0;
  }
  int64_t lin = 0;
  for (uint32_t z = 0; z < launch->ntg[2]; ++z)
    for (uint32_t y = 0; y < launch->ntg[1]; ++y)
      for (uint32_t x = 0; x < launch->ntg[0]; ++x, ++lin) {
        if (lin % worker_count != worker_index) continue;
        result->err_tg = lin;
        run_threadgroup(x, y, z);
      }
  result->err_tg = INT64_MAX;
  for (size_t i = 0; i < sizeof poison; ++i)
    if (poison[i]) {
      ctx.cur = nullptr;
      finish(E_OOB, std::string("out-of-bounds write (reads outside buffers were allowed, writes are not); "
                                "the first out-of-bounds access was: ") + result->oob_msg);
    }
  result->status = 0;
  return 0;
}

#include <sys/syscall.h>
#include <poll.h>
// fork without running the process's pthread_atfork handlers: numpy's OpenBLAS tears down
// and restarts its thread pool around every fork(), which costs more than the fork itself.
// The child only runs this runtime and then _exit()s.
static pid_t raw_fork() {
#if defined(__linux__) && defined(SYS_fork)
  if (!getenv("GEMMGLOSSARY_EMULATOR_LIBC_FORK")) return (pid_t)syscall(SYS_fork);
#elif defined(__linux__) && defined(SYS_clone)
  if (!getenv("GEMMGLOSSARY_EMULATOR_LIBC_FORK")) return (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
#endif
  return fork();
}

extern "C" __attribute__((visibility("default"))) int mslemu_run(MslemuLaunch* L) {
  launch = L;
  result = L->result;
  Dl_info di;
  if (dladdr((void*)&mslemu_run, &di)) so_base = (uintptr_t)di.dli_fbase;
  result->err_tg = -1;
  if (!L->isolate) return run_all();
  fflush(stdout); fflush(stderr);
  // Threadgroups are independent: split them over `workers` child processes (interleaved).
  // Every worker stops at its first error; the error of the lowest threadgroup wins, so the
  // report does not depend on the number of workers.
  uint64_t total = (uint64_t)L->ntg[0] * L->ntg[1] * L->ntg[2];
  int nw = L->workers < 1 ? 1 : L->workers > 16 ? 16 : L->workers;
  if ((uint64_t)nw > total) nw = (int)(total ? total : 1);
  MslemuResult* res[16];
  res[0] = L->result;
  for (int w = 1; w < nw; ++w) {
    void* m = mmap(nullptr, sizeof(MslemuResult), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) { nw = w; break; }
    res[w] = (MslemuResult*)m;
    memset(res[w], 0, sizeof(MslemuResult));
    res[w]->status = -1;
    res[w]->err_tg = -1;
  }
  pid_t pids[16];
  int sts[16] = {0};
  bool done[16] = {false};
  for (int w = 0; w < nw; ++w) {
    pid_t pid = raw_fork();
    if (pid < 0) {
      for (int k = 0; k < w; ++k) kill(pids[k], SIGKILL);
      snprintf(result->msg, sizeof result->msg, "fork failed");
      result->status = E_GENERIC;
      return result->status;
    }
    if (pid == 0) {
      worker_index = w; worker_count = nw; result = res[w];
      run_all();
      _exit(0);
    }
    pids[w] = pid;
  }
  int polls = 0, left = nw;
  double waited = 0, limit = L->timeout > 0 ? L->timeout + 10 : 1e30;
  int pfd[16];
  bool have_pidfd = true;
#if defined(__linux__) && defined(SYS_pidfd_open)
  for (int w = 0; w < nw; ++w) {
    pfd[w] = (int)syscall(SYS_pidfd_open, pids[w], 0);
    if (pfd[w] < 0) have_pidfd = false;
  }
#else
  have_pidfd = false;
  for (int w = 0; w < nw; ++w) pfd[w] = -1;
#endif
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  while (left) {
    bool progress = false;
    for (int w = 0; w < nw; ++w) {
      if (done[w]) continue;
      pid_t r = waitpid(pids[w], &sts[w], WNOHANG);
      if (r == pids[w] || r < 0) { done[w] = true; --left; progress = true; }
    }
    if (!left) break;
    if (progress) continue;
    if (have_pidfd) {
      // sleep until a worker exits (or 100 ms pass, to check the time limit)
      struct pollfd fds[16];
      int k = 0;
      for (int w = 0; w < nw; ++w) if (!done[w]) { fds[k].fd = pfd[w]; fds[k].events = POLLIN; fds[k].revents = 0; ++k; }
      poll(fds, k, 100);
      struct timespec t1;
      clock_gettime(CLOCK_MONOTONIC, &t1);
      waited = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    } else {
      // back off from 20 us to 2 ms: short launches return quickly, long ones cost no CPU
      long ns = 20000L << (polls < 7 ? polls : 7);
      if (ns > 2000000L) ns = 2000000L;
      ++polls;
      struct timespec ts{0, ns};
      nanosleep(&ts, nullptr);
      waited += ns * 1e-9;
    }
    if (waited > limit) {
      for (int w = 0; w < nw; ++w) if (!done[w]) { kill(pids[w], SIGKILL); waitpid(pids[w], &sts[w], 0); }
      for (int w = 0; w < nw; ++w) if (pfd[w] >= 0) close(pfd[w]);
      result->status = E_TIMEOUT;
      snprintf(result->msg, sizeof result->msg, "timeout: the kernel did not finish within %g s and was killed", L->timeout);
      return result->status;
    }
  }
  for (int w = 0; w < nw; ++w) if (pfd[w] >= 0) close(pfd[w]);
  for (int w = 0; w < nw; ++w) {
    MslemuResult* X = res[w];
    int st = sts[w];
    if (WIFSIGNALED(st)) {
      X->status = E_CRASH;
      X->sig = WTERMSIG(st);
      snprintf(X->msg, sizeof X->msg, "kernel process died with signal %d (%s)", X->sig, strsignal(X->sig));
    } else if (WIFEXITED(st) && WEXITSTATUS(st) != 0 && X->status <= 0) {
      X->status = E_GENERIC;
      snprintf(X->msg, sizeof X->msg, "kernel process exited with status %d", WEXITSTATUS(st));
    } else if (X->status < 0) {
      X->status = E_GENERIC;
      snprintf(X->msg, sizeof X->msg, "kernel process ended without a result");
    }
  }
  // merge into res[0]
  int best = -1;
  for (int w = 0; w < nw; ++w)
    if (res[w]->status != 0 && (best < 0 || res[w]->err_tg < res[best]->err_tg)) best = w;
  int warn_from = -1, oob_from = -1;
  for (int w = 0; w < nw; ++w) {
    if (res[w]->warn && warn_from < 0) warn_from = w;
    if (res[w]->oob_msg[0] && oob_from < 0) oob_from = w;
  }
  if (best > 0) {
    result->status = res[best]->status; result->sig = res[best]->sig; result->err_tg = res[best]->err_tg;
    memcpy(result->msg, res[best]->msg, sizeof result->msg);
  }
  if (warn_from > 0) { result->warn = res[warn_from]->warn; memcpy(result->warn_msg, res[warn_from]->warn_msg, sizeof result->warn_msg); }
  if (oob_from > 0) memcpy(result->oob_msg, res[oob_from]->oob_msg, sizeof result->oob_msg);
  for (int w = 1; w < nw && !result->uninit_msg[0]; ++w)
    if (res[w]->uninit_msg[0]) memcpy(result->uninit_msg, res[w]->uninit_msg, sizeof result->uninit_msg);
  if (best < 0) result->status = 0;
  for (int w = 1; w < nw; ++w) munmap(res[w], sizeof(MslemuResult));
  return result->status;
}
