// gemmglossary Metal emulator runtime: fibers, per-threadgroup scheduler, barriers,
// simd-group rendezvous, diagnostics and process isolation. Original code.
//
// Sections, in order: the layout of the structs shared with kernel.py (mslemu_abi.h); the context switch
// (context_switch.h); this process's run state; reports (message pieces, finish, fail);
// barriers and simd-group rendezvous; deferred simdgroup multiplies (flush_combine);
// threadgroup memory and its diagnostics (oob, race, uninit_read); the scheduler
// (fibers, pick, deadlock, run_threadgroup); signals (timeout, crash); run_all (this
// process's threadgroups); worker processes (run_isolated) and mslemu_run, the entry.
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
#include <poll.h>
#include <sys/syscall.h>

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

// ------------------------------------------------------------------ the interface with kernel.py
// MslemuLaunch, MslemuResult and ParamInfo are described in mslemu_abi.h; this table says
// where the compiler put their fields, so that abi.py can check its reading of the header.
extern "C" __attribute__((visibility("default"))) const AbiField* mslemu_abi_layout(int* n) {
#define MSLEMU_PROBE_FIELD(type, name) {#type, #name, offsetof(PROBED, name), sizeof(((PROBED*)nullptr)->name)},
#define MSLEMU_PROBE_ARRAY(type, name, count) MSLEMU_PROBE_FIELD(type, name)
  static const AbiField rows[] = {
    {"struct", "AbiField", 0, sizeof(AbiField)},
#define PROBED MslemuResult
    {"struct", "MslemuResult", 0, sizeof(MslemuResult)},
    MSLEMU_RESULT_FIELDS(MSLEMU_PROBE_FIELD, MSLEMU_PROBE_ARRAY)
#undef PROBED
#define PROBED MslemuLaunch
    {"struct", "MslemuLaunch", 0, sizeof(MslemuLaunch)},
    MSLEMU_LAUNCH_FIELDS(MSLEMU_PROBE_FIELD, MSLEMU_PROBE_ARRAY)
#undef PROBED
#define PROBED ParamInfo
    {"struct", "ParamInfo", 0, sizeof(ParamInfo)},
    MSLEMU_PARAM_INFO_FIELDS(MSLEMU_PROBE_FIELD, MSLEMU_PROBE_ARRAY)
#undef PROBED
  };
#undef MSLEMU_PROBE_FIELD
#undef MSLEMU_PROBE_ARRAY
  *n = (int)(sizeof rows / sizeof *rows);
  return rows;
}

// ------------------------------------------------------------------ context switch
#if !defined(MSLEMU_UCONTEXT)
#include "context_switch.h"
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
static bool returned_warned;      // the returned-before-a-barrier warning is given once per launch
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
  if (op == OP_SIMD_BARRIER) return "simdgroup_barrier";
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
  if (live_threads < tg_threads && !returned_warned) {
    returned_warned = true;
    std::vector<uint32_t> done;
    for (uint32_t i = 0; i < tg_threads; ++i) if (fibers[i].state == F_DONE) done.push_back(i);
    portability(first->wfile, first->wline,
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

// two waiting fibers wait at the same source location (the file names are usually one pointer)
static bool same_site(const Fiber* a, const Fiber* b) {
  return a->wline == b->wline && (a->wfile == b->wfile || (a->wfile && b->wfile && !strcmp(a->wfile, b->wfile)));
}

// the n lanes from f0 on wait at one collective (compared by pointer: a fast, conservative test)
static bool same_collective_site(const Fiber* f0, uint32_t n) {
  bool same = true;
  for (uint32_t i = 0; i < n; ++i)
    same &= (f0[i].wop == f0->wop) & (f0[i].wline == f0->wline) & (f0[i].wfile == f0->wfile);
  return same;
}

[[noreturn]] static void report_split_collective(uint32_t sg, const Fiber* a, const Fiber* b) {
  ctx.cur = nullptr;
  finish(E_DIVERGE, fmt("simdgroup divergence in %s, simdgroup %u: lanes reach different simd-group operations "
                        "(%s at %s and %s at %s); all active lanes must execute the same one:",
                        tg_str().c_str(), sg, op_name(a->wop), site(a->wfile, a->wline).c_str(),
                        op_name(b->wop), site(b->wfile, b->wline).c_str()) + describe_waiting(sg));
}

// the lanes of simdgroup `sg`: how many the threadgroup has (the last simdgroup may be short)
static uint32_t simdgroup_size(uint32_t sg) { return tg_threads - sg * 32 < 32 ? tg_threads - sg * 32 : 32; }

// every live lane of the simdgroup waits at a collective: check that they wait at the same
// one, compute it, and let the lanes run on
static void complete_sg(uint32_t sg) {
  Fiber* lanes[32];
  uint32_t base = sg * 32, n = simdgroup_size(sg);
  Fiber* first = nullptr;
  if (sg_count[sg].live == n && same_collective_site(&fibers[base], n)) {  // the common case: all lanes, one site
    for (uint32_t i = 0; i < n; ++i) lanes[i] = &fibers[base + i];
    first = lanes[0];
  } else {
    for (uint32_t i = 0; i < n; ++i) {
      Fiber* f = &fibers[base + i];
      lanes[i] = f->state == F_SIMD ? f : nullptr;
      if (!lanes[i]) continue;
      if (!first) first = f;
      else if (f->wop != first->wop || !same_site(f, first)) report_split_collective(sg, first, f);
    }
  }
  if (first->wop != OP_SIMD_BARRIER) ((CombineFn)first->cextra)(first->wop, lanes, (int)n);
  else ctx.sg_sync[sg] = ++ctx.clock;
  for (uint32_t i = 0; i < n; ++i) if (lanes[i]) lanes[i]->state = F_READY;
  sg_count[sg].arrived = 0;
}

void mslemu::collective(int op, const char* file, int line, CombineFn fn) {
  Fiber* f = ctx.cur;
  if (f->nq && op != OP_MMA) mma_flush(file, line);
  f->state = F_SIMD; f->wfile = file; f->wline = line; f->wop = op; f->cextra = (const void*)fn;
  if (++sg_count[f->sg].arrived == sg_count[f->sg].live) complete_sg(f->sg);
  else yield_();
  f->state = F_READY;
}

void mslemu::simd_barrier(const char* file, int line) { collective(OP_SIMD_BARRIER, file, line, nullptr); }

// ------------------------------------------------------------------ deferred simdgroup multiplies
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

// results are rounded to the destination type, as a register of that type would be
static void round_matrix(float (*D)[8], int td) {
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c) {
      if (td == 1) D[r][c] = f16_bits_to_f32(f32_to_f16_bits(D[r][c]));
      else if (td == 2) D[r][c] = bf16_bits_to_f32(f32_to_bf16_bits(D[r][c]));
    }
}

// every lane must have queued as many multiplies as the others
static void check_queue_lengths(Fiber** lanes, int n, int first) {
  Fiber* f0 = lanes[first];
  int nq = f0->nq;
  for (int i = 0; i < n; ++i) {
    if (!lanes[i] || lanes[i]->nq == nq) continue;
    int k = nq < lanes[i]->nq ? nq : lanes[i]->nq;
    Fiber* longer = nq > lanes[i]->nq ? f0 : lanes[i];
    const LaneOp& o = qop(f0->sg, k, longer->lane);
    ctx.cur = nullptr;
    finish(E_DIVERGE, fmt("simdgroup divergence in %s, simdgroup %u: lane %d performed %d simdgroup matrix multiplies "
                          "but lane %d performed %d (the next one is at %s); simdgroup_matrix operations need "
                          "uniform control flow in the simdgroup", tg_str().c_str(), f0->sg, f0->lane, nq, lanes[i]->lane,
                          lanes[i]->nq, site(o.file, o.line).c_str()));
  }
}

// What the lanes agree on about one queued multiply: for each operand, whether every lane
// takes it from the same earlier multiply (or none), and whether all want one result type.
struct QueuedAgreement { bool uniform_dep[3]; bool same_td; };

static QueuedAgreement compare_lanes(uint32_t sg, const LaneOp* ops, Fiber** lanes, int n, int first) {
  QueuedAgreement agree{{true, true, true}, true};
  const LaneOp& o0 = ops[first];
  for (int i = 0; i < n; ++i) {
    if (!lanes[i]) continue;
    const LaneOp& o = ops[i];
    if (o.line != o0.line || (o.file != o0.file && strcmp(o.file, o0.file))) {
      ctx.cur = nullptr;
      finish(E_DIVERGE, fmt("simdgroup divergence in %s, simdgroup %u: lane %d multiplies at %s while lane %d multiplies "
                            "at %s; simdgroup_matrix operations need uniform control flow in the simdgroup",
                            tg_str().c_str(), sg, first, site(o0.file, o0.line).c_str(), i, site(o.file, o.line).c_str()));
    }
    for (int k = 0; k < 3; ++k) agree.uniform_dep[k] = agree.uniform_dep[k] && o.dep[k] == o0.dep[k];
    agree.same_td = agree.same_td && o.td == o0.td;
  }
  return agree;
}

// Operand k (0 a, 1 b, 2 c) of queued multiply `ops` as a whole 8x8 matrix. An operand
// produced by an earlier queued multiply (the same one on every lane, in uniform control
// flow) is copied whole; otherwise each lane contributes its two elements.
static void gather_operand(float (*X)[8], int k, const LaneOp* ops, Fiber** lanes, int n, bool full, bool uniform_dep,
                           int first) {
  const LaneOp& o0 = ops[first];
  if (full && uniform_dep && o0.dep[k] >= 0) {
    memcpy(X, mma_results[o0.dep[k]], sizeof(float) * 64);
  } else if (full && uniform_dep) {  // fresh operands staged by every lane
    for (int i = 0; i < 32; ++i) {
      int rr = FRAGMENT_ROW[i], cc = FRAGMENT_COL[i];
      X[rr][cc] = ops[i].in[2 * k];
      X[rr][cc + 1] = ops[i].in[2 * k + 1];
    }
  } else {
    memset(X, 0, sizeof(float) * 64);
    for (int i = 0; i < n; ++i) {
      if (!lanes[i]) continue;
      const LaneOp& o = ops[i];
      int rr = FRAGMENT_ROW[i], cc = FRAGMENT_COL[i];
      const float* src = o.dep[k] >= 0 ? &mma_results[o.dep[k]][rr][cc] : &o.in[2 * k];
      X[rr][cc] = src[0];
      X[rr][cc + 1] = src[1];
    }
  }
}

// each lane's two elements of each result go to the matrix register that asked for them
static void write_back_results(uint32_t sg, int nq, Fiber** lanes, int n) {
  for (int q = 0; q < nq; ++q) {
    LaneOp* ops = &qop(sg, q, 0);
    for (int i = 0; i < n; ++i) {
      LaneOp& o = ops[i];
      if (!lanes[i] || !o.reg_e) continue;
      int rr = FRAGMENT_ROW[i], cc = FRAGMENT_COL[i];
      float v0 = mma_results[q][rr][cc], v1 = mma_results[q][rr][cc + 1];
      if (o.td == 0) { ((float*)o.reg_e)[0] = v0; ((float*)o.reg_e)[1] = v1; }
      else if (o.td == 1) { ((uint16_t*)o.reg_e)[0] = f32_to_f16_bits(v0); ((uint16_t*)o.reg_e)[1] = f32_to_f16_bits(v1); }
      else { ((uint16_t*)o.reg_e)[0] = f32_to_bf16_bits(v0); ((uint16_t*)o.reg_e)[1] = f32_to_bf16_bits(v1); }
      *o.reg_pend = -1;
      o.reg_e = nullptr; o.reg_pend = nullptr;
    }
  }
}

// The combine function of a flush: the last lane to arrive computes, in order, every
// multiply the simdgroup queued, then hands each lane its elements of the results.
static void flush_combine(int, Fiber** lanes, int n) {
  int first = -1;
  for (int i = 0; i < n; ++i) if (lanes[i]) { first = i; break; }
  uint32_t sg = lanes[first]->sg;
  int nq = lanes[first]->nq;
  check_queue_lengths(lanes, n, first);
  bool full = n == 32;
  for (int i = 0; i < n; ++i) full = full && lanes[i];
  // every lane hashed the sites and operand sources of its queue: equal hashes (the
  // uniform case) skip the per-multiply comparison of the lanes
  bool same_hash = full;
  for (int i = 1; i < n && same_hash; ++i) same_hash = lanes[i]->qhash == lanes[0]->qhash;
  float A[8][8], B[8][8], C[8][8];
  float (*operand[3])[8] = {A, B, C};
  for (int q = 0; q < nq; ++q) {
    const LaneOp* ops = &qop(sg, q, 0);
    QueuedAgreement agree{{true, true, true}, true};
    if (!same_hash) agree = compare_lanes(sg, ops, lanes, n, first);
    for (int k = 0; k < 3; ++k) gather_operand(operand[k], k, ops, lanes, n, full, agree.uniform_dep[k], first);
    mm8(A, B, C, mma_results[q]);
    if (!agree.same_td) round_matrix(mma_results[q], 1);  // mixed destination types cannot happen in uniform code
    else if (ops[first].td) round_matrix(mma_results[q], ops[first].td);
  }
  write_back_results(sg, nq, lanes, n);
  for (int i = 0; i < n; ++i) if (lanes[i]) { lanes[i]->nq = 0; lanes[i]->qhash = 0; }
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
    for (int i = 0; i < MSLEMU_MAX_BUFFERS; ++i) {
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

// warnings from kernel code: one line each in warn_msg, once per source line that caused them
void mslemu::portability(const char* file, int line, const char* f, ...) {
  static const char* seen_file[64];
  static int seen_line[64], nseen;
  for (int i = 0; i < nseen; ++i) if (seen_line[i] == line && seen_file[i] == file) return;
  if (nseen < 64) { seen_file[nseen] = file; seen_line[nseen] = line; ++nseen; }
  char b[1024];
  va_list ap; va_start(ap, f); vsnprintf(b, sizeof b, f, ap); va_end(ap);
  size_t used = strlen(result->warn_msg), n = strlen(b);
  if (used + n + 2 > sizeof result->warn_msg) return;
  if (used) result->warn_msg[used++] = '\n';
  memcpy(result->warn_msg + used, b, n + 1);
  result->warn = 1;
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
      if (fs->wop == OP_MMA && fs->nq > 0) {  // a deferred multiply: name where it was issued
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

// the random schedule is seeded per threadgroup, so it does not depend on the workers
static void seed_schedule(uint64_t linear_tg) {
  schedule_rng = (launch->seed + 1) * 0x9E3779B97F4A7C15ull ^ (linear_tg + 1) * 0xBF58476D1CE4E5B9ull;
  if (!schedule_rng) schedule_rng = 88172645463325252ull;
}

// the threadgroup's real size: with dispatchThreads the edge threadgroups are cut at the grid
static void size_threadgroup() {
  for (int i = 0; i < 3; ++i) {
    uint32_t n = launch->tptg[i];
    if (launch->dispatch_threads) {
      uint32_t start = ctx.tg_pos[i] * launch->tptg[i];
      if (start + n > launch->grid[i]) n = launch->grid[i] - start;
    }
    ctx.tptg[i] = n;
  }
  tg_threads = ctx.tptg[0] * ctx.tptg[1] * ctx.tptg[2];
  ctx.nthreads = tg_threads;
  ctx.nsg = (tg_threads + 31) / 32;
}

// fresh threadgroup memory (zeroed; a new generation for the race shadow) and the
// [[threadgroup(n)]] buffers of the launch
static void reset_threadgroup_memory() {
  ++ctx.tg_gen;
  ctx.arena_used = 0;
  tg_region_count = 0;
  for (int i = 0; i < MSLEMU_MAX_BUFFERS; ++i) {
    ctx.tgm[i] = launch->tgm_size[i] ? tg_alloc(launch->tgm_size[i], 16, "threadgroup buffer") : nullptr;
    ctx.tgm_size[i] = launch->tgm_size[i];
  }
  memset(ctx.arena, 0, 32768);
  ctx.tg_sync = ++ctx.clock;
  ctx.tg_start = ctx.clock;
  for (int i = 0; i < 32; ++i) ctx.sg_sync[i] = ctx.clock;
}

// every thread of the threadgroup as a fiber that has not run yet
static void init_fibers() {
  live_threads = tg_threads; barrier_arrivals = 0; lockstep_cursor = 0;
  for (uint32_t s = 0; s < ctx.nsg; ++s) { sg_count[s].live = simdgroup_size(s); sg_count[s].arrived = 0; }
  const uint32_t* n = ctx.tptg;
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
#else
    f->sp = fiber_initial_sp(top, &fiber_main);
#endif
  }
}

// run fibers until every thread returned; threads that can never run again are a deadlock
static void schedule_until_done() {
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

static void run_threadgroup(uint32_t tx, uint32_t ty, uint32_t tz) {
  ctx.tg_pos[0] = tx; ctx.tg_pos[1] = ty; ctx.tg_pos[2] = tz;
  seed_schedule(((uint64_t)tz * launch->ntg[1] + ty) * launch->ntg[0] + tx);
  size_threadgroup();
  reset_threadgroup_memory();
  init_fibers();
  schedule_until_done();
}

// ------------------------------------------------------------------ signals
static uintptr_t signal_pc(void* uc_) {
  ucontext_t* uc = (ucontext_t*)uc_;
  (void)uc;
#if defined(__x86_64__) && defined(__linux__)
  return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__) && defined(__linux__)
  return (uintptr_t)uc->uc_mcontext.pc;
#elif defined(__x86_64__) && defined(__APPLE__)
  return (uintptr_t)uc->uc_mcontext->__ss.__rip;
#elif defined(__aarch64__) && defined(__APPLE__)
  return (uintptr_t)uc->uc_mcontext->__ss.__pc;
#else
  return 0;
#endif
}

[[noreturn]] static void report_timeout(uintptr_t pc) {
  std::string m = fmt("timeout: the kernel did not finish within %g s (infinite loop or a very large launch?)",
                      launch->timeout);
  if (ctx.cur) m += "; " + th_str(ctx.cur) + " of " + tg_str() + " was running at " + pcs((void*)pc);
  if (fibers && tg_threads) m += "; threads:" + describe_waiting(-1);
  result->sig = SIGALRM;
  finish(E_TIMEOUT, m);
}

// a fault just below a fiber's stack (in its guard page, or under the lowest stack) is an overflow
static bool is_stack_overflow(int sig, const char* a) {
  return sig == SIGSEGV && fiber_stacks && a >= fiber_stacks - (1 << 20) &&
         a < fiber_stacks + fiber_stack_count * (FIBER_STACK_BYTES + STACK_GUARD_BYTES) &&
         (a < fiber_stacks || ((size_t)(a - fiber_stacks) % (FIBER_STACK_BYTES + STACK_GUARD_BYTES)) < STACK_GUARD_BYTES);
}

[[noreturn]] static void report_crash(int sig, const siginfo_t* si, uintptr_t pc) {
  const char* name = sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : sig == SIGFPE ? "SIGFPE"
                   : sig == SIGILL ? "SIGILL" : sig == SIGABRT ? "SIGABRT" : sig == SIGTRAP ? "SIGTRAP" : "signal";
  std::string m = fmt("kernel crashed with %s", name);
  int unbound = (sig == SIGSEGV || sig == SIGBUS) ? unbound_index(si->si_addr) : -1;
  if (unbound >= 0 && launch->buf_name[unbound]) {
    // a reference parameter whose buffer the launch left unbound (mslemu_bind.h)
    m = fmt("kernel read parameter '%s' [[buffer(%d)]]", launch->buf_name[unbound], unbound);
    if (pc) m += " at " + pcs((void*)pc);
    m += ", but the launch left that buffer unbound (bind it, or keep the kernel from reading it)";
    if (ctx.cur) m += " in " + tg_str() + ", " + th_str(ctx.cur);
    finish(E_OOB, m);
  }
  if (is_stack_overflow(sig, (const char*)si->si_addr))
    m += fmt(" (stack overflow of a GPU thread: its %zu KiB stack is full; a thread-local array that large "
             "would not fit in a GPU thread's registers or stack either)", FIBER_STACK_BYTES / 1024);
  else if (sig == SIGSEGV || sig == SIGBUS)
    m += fmt(" (invalid address %p)", si->si_addr);
  if (pc) m += " at " + pcs((void*)pc);
  if (ctx.cur) m += " in " + tg_str() + ", " + th_str(ctx.cur);
  result->sig = sig;
  finish(E_CRASH, m);
}

static void on_signal(int sig, siginfo_t* si, void* uc) {
  uintptr_t pc = signal_pc(uc);
  if (sig == SIGALRM) report_timeout(pc);
  report_crash(sig, si, pc);
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

// ------------------------------------------------------------------ running the threadgroups
static void* zalloc(size_t n) {
  void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) finish(E_GENERIC, "out of memory");
  return p;
}

// stacks (each above a PROT_NONE guard page), fibers, multiply queues, threadgroup memory
// and its race shadow, for the largest threadgroup of the launch
static void allocate_threadgroup_state() {
  uint32_t maxn = launch->tptg[0] * launch->tptg[1] * launch->tptg[2];
  fiber_stack_count = maxn;
  fiber_stacks = (char*)mmap(nullptr, maxn * (FIBER_STACK_BYTES + STACK_GUARD_BYTES), PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (fiber_stacks == MAP_FAILED) finish(E_GENERIC, "cannot allocate fiber stacks");
  for (uint32_t i = 0; i < maxn; ++i)
    mprotect(fiber_stacks + (size_t)i * (FIBER_STACK_BYTES + STACK_GUARD_BYTES), STACK_GUARD_BYTES, PROT_NONE);
  fibers = (Fiber*)zalloc(maxn * sizeof(Fiber));
  ctx.mmaq = (LaneOp*)zalloc((size_t)((maxn + 31) / 32) * MMA_QCAP * 32 * sizeof(LaneOp));
#ifdef MSLEMU_UCONTEXT
  uctx.resize(maxn);
#endif
  ctx.arena = (char*)zalloc(65536);
  ctx.arena_size = 32768;
  ctx.shadow = zalloc((32768 / 2 + 8) * sizeof(Shadow));
}

// what kernel code reads of the launch: buffers, grid, checking modes
static void bind_launch() {
  ctx.race_check = launch->race_check;
  ctx.pc_base = so_base;
  ctx.oob_lenient = launch->oob_reads;
  ctx.clock = 1;
  for (int i = 0; i < MSLEMU_MAX_BUFFERS; ++i) {
    ctx.buf[i] = launch->buf[i]; ctx.buf_size[i] = launch->buf_size[i]; ctx.buf_name[i] = launch->buf_name[i];
  }
  for (int i = 0; i < 3; ++i) {
    ctx.max_tptg[i] = launch->tptg[i];
    ctx.tgs_per_grid[i] = launch->ntg[i];
    ctx.threads_per_grid[i] = launch->grid[i];
    ctx.grid_origin[i] = 0;
  }
}

// Runs this process's share of the threadgroups (all of them in-process, else every
// worker_count-th from worker_index); the first error ends the process.
static int run_all() {
  install_handlers();
  allocate_threadgroup_state();
  bind_launch();
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

// ------------------------------------------------------------------ worker processes
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

static const int MAX_WORKERS = 16;  // MslemuLaunch.workers is clamped to this

struct Workers {
  int count = 0;
  MslemuResult* res[MAX_WORKERS];  // res[0] is the caller's result; the others are shared mappings
  pid_t pid[MAX_WORKERS];
  int status[MAX_WORKERS] = {0};
  bool done[MAX_WORKERS] = {false};
  int pidfd[MAX_WORKERS];
};

// one result per worker, in memory shared with it
static void map_worker_results(Workers& w, int wanted) {
  w.res[0] = launch->result;
  w.count = 1;
  for (int i = 1; i < wanted; ++i) {
    void* m = mmap(nullptr, sizeof(MslemuResult), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) break;
    w.res[i] = (MslemuResult*)m;
    memset(w.res[i], 0, sizeof(MslemuResult));
    w.res[i]->status = -1;
    w.res[i]->err_tg = -1;
    w.count = i + 1;
  }
}

static bool start_workers(Workers& w) {
  for (int i = 0; i < w.count; ++i) {
    pid_t pid = raw_fork();
    if (pid < 0) {
      for (int k = 0; k < i; ++k) kill(w.pid[k], SIGKILL);
      return false;
    }
    if (pid == 0) {
      worker_index = i; worker_count = w.count; result = w.res[i];
      run_all();
      _exit(0);
    }
    w.pid[i] = pid;
  }
  return true;
}

// a descriptor per worker that becomes readable when it exits (Linux pidfd), or -1 for all
static bool open_exit_notifications(Workers& w) {
  bool have = true;
#if defined(__linux__) && defined(SYS_pidfd_open)
  for (int i = 0; i < w.count; ++i) {
    w.pidfd[i] = (int)syscall(SYS_pidfd_open, w.pid[i], 0);
    if (w.pidfd[i] < 0) have = false;
  }
#else
  have = false;
  for (int i = 0; i < w.count; ++i) w.pidfd[i] = -1;
#endif
  return have;
}

static void close_exit_notifications(Workers& w) {
  for (int i = 0; i < w.count; ++i) if (w.pidfd[i] >= 0) close(w.pidfd[i]);
}

// reap the workers that exited; how many are still running
static int reap_workers(Workers& w) {
  int left = 0;
  for (int i = 0; i < w.count; ++i) {
    if (w.done[i]) continue;
    pid_t r = waitpid(w.pid[i], &w.status[i], WNOHANG);
    if (r == w.pid[i] || r < 0) w.done[i] = true;
    else ++left;
  }
  return left;
}

static double seconds_since(const struct timespec& t0) {
  struct timespec t1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
}

// Wait for every worker; false if they outlived the time limit (the workers' own timers
// report a timeout with the threads' state: this is the backstop if they cannot).
static bool wait_for_workers(Workers& w, double limit) {
  bool have_pidfd = open_exit_notifications(w);
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int polls = 0;
  double waited = 0;
  int left = w.count, before = w.count;
  while ((left = reap_workers(w)) > 0) {
    if (left < before) { before = left; continue; }  // someone exited: look again at once
    if (have_pidfd) {
      // sleep until a worker exits (or 100 ms pass, to check the time limit)
      struct pollfd fds[MAX_WORKERS];
      int k = 0;
      for (int i = 0; i < w.count; ++i)
        if (!w.done[i]) { fds[k].fd = w.pidfd[i]; fds[k].events = POLLIN; fds[k].revents = 0; ++k; }
      poll(fds, k, 100);
      waited = seconds_since(t0);
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
      for (int i = 0; i < w.count; ++i)
        if (!w.done[i]) { kill(w.pid[i], SIGKILL); waitpid(w.pid[i], &w.status[i], 0); }
      close_exit_notifications(w);
      return false;
    }
  }
  close_exit_notifications(w);
  return true;
}

// a worker that died without writing its result gets one saying how it ended
static void describe_worker_exit(MslemuResult* x, int st) {
  if (WIFSIGNALED(st)) {
    x->status = E_CRASH;
    x->sig = WTERMSIG(st);
    snprintf(x->msg, sizeof x->msg, "kernel process died with signal %d (%s)", x->sig, strsignal(x->sig));
  } else if (WIFEXITED(st) && WEXITSTATUS(st) != 0 && x->status <= 0) {
    x->status = E_GENERIC;
    snprintf(x->msg, sizeof x->msg, "kernel process exited with status %d", WEXITSTATUS(st));
  } else if (x->status < 0) {
    x->status = E_GENERIC;
    snprintf(x->msg, sizeof x->msg, "kernel process ended without a result");
  }
}

// Into res[0]: the error of the lowest-numbered failing threadgroup, and the first warning
// of each kind, so the report does not depend on the number of workers.
static void merge_worker_results(Workers& w) {
  MslemuResult* out = w.res[0];
  int best = -1, warn_from = -1, oob_from = -1;
  for (int i = 0; i < w.count; ++i) {
    if (w.res[i]->status != 0 && (best < 0 || w.res[i]->err_tg < w.res[best]->err_tg)) best = i;
    if (w.res[i]->warn && warn_from < 0) warn_from = i;
    if (w.res[i]->oob_msg[0] && oob_from < 0) oob_from = i;
  }
  if (best > 0) {
    out->status = w.res[best]->status; out->sig = w.res[best]->sig; out->err_tg = w.res[best]->err_tg;
    memcpy(out->msg, w.res[best]->msg, sizeof out->msg);
  }
  if (warn_from > 0) { out->warn = w.res[warn_from]->warn; memcpy(out->warn_msg, w.res[warn_from]->warn_msg, sizeof out->warn_msg); }
  if (oob_from > 0) memcpy(out->oob_msg, w.res[oob_from]->oob_msg, sizeof out->oob_msg);
  for (int i = 1; i < w.count && !out->uninit_msg[0]; ++i)
    if (w.res[i]->uninit_msg[0]) memcpy(out->uninit_msg, w.res[i]->uninit_msg, sizeof out->uninit_msg);
  if (best < 0) out->status = 0;
}

// Threadgroups are independent: split them over `workers` child processes (interleaved).
// Every worker stops at its first error; merge_worker_results picks what is reported.
static int run_isolated() {
  uint64_t total = (uint64_t)launch->ntg[0] * launch->ntg[1] * launch->ntg[2];
  int wanted = launch->workers < 1 ? 1 : launch->workers > MAX_WORKERS ? MAX_WORKERS : launch->workers;
  if ((uint64_t)wanted > total) wanted = (int)(total ? total : 1);
  Workers w;
  map_worker_results(w, wanted);
  fflush(stdout); fflush(stderr);
  int rc;
  if (!start_workers(w)) {
    snprintf(result->msg, sizeof result->msg, "fork failed");
    rc = result->status = E_GENERIC;
  } else if (!wait_for_workers(w, launch->timeout > 0 ? launch->timeout + 10 : 1e30)) {
    result->status = E_TIMEOUT;
    snprintf(result->msg, sizeof result->msg, "timeout: the kernel did not finish within %g s and was killed",
             launch->timeout);
    rc = result->status;
  } else {
    for (int i = 0; i < w.count; ++i) describe_worker_exit(w.res[i], w.status[i]);
    merge_worker_results(w);
    rc = result->status;
  }
  for (int i = 1; i < w.count; ++i) munmap(w.res[i], sizeof(MslemuResult));
  return rc;
}

extern "C" __attribute__((visibility("default"))) int mslemu_run(MslemuLaunch* l) {
  launch = l;
  result = l->result;
  Dl_info di;
  if (dladdr((void*)&mslemu_run, &di)) so_base = (uintptr_t)di.dli_fbase;
  result->err_tg = -1;
  return launch->isolate ? run_isolated() : run_all();
}
