// gemmglossary Metal emulator runtime: fibers, per-threadgroup scheduler, barriers,
// simd-group rendezvous, diagnostics and process isolation. Original code.
//
// Sections, in order: the layout of the structs shared with kernel.py (mslemu_abi.h); the context switch
// (context_switch.h); this process's run state; reports (message pieces, finish, fail);
// barriers and simd-group rendezvous; deferred simdgroup multiplies (flush_combine);
// threadgroup memory and its diagnostics (oob, race, uninit_read); the scheduler
// (fibers, pick, deadlock, run_threadgroup); signals (the tick: timeout and a vanished
// caller; crashes); run_all (this process's threadgroups); the entry points: mslemu_run
// (in the caller, for debugging), mslemu_fork_workers and mslemu_worker (a spawned worker).
// kernel.py starts the workers, waits for them and merges their results.
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
#include <sys/syscall.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

#include "mslemu_rt.h"

#if (!defined(__x86_64__) && !defined(__aarch64__)) || defined(MSLEMU_FORCE_UCONTEXT)
#include <ucontext.h>
#define MSLEMU_UCONTEXT 1
#endif

namespace mslemu {
Ctx ctx;
volatile int user_trap = 0;
alignas(64) char zero_block[4096];
}  // namespace mslemu

using namespace mslemu;

// Coverage builds (gemmglossary.coverage compiles kernels with --coverage and this file with
// -DMSLEMU_COVERAGE). libgcov writes a process's counters from an exit handler, which _exit
// skips, so a worker writes them itself before it ends; and a forked worker starts from
// zero, since the counts it inherited are the caller's, written when the caller exits.
#ifdef MSLEMU_COVERAGE
extern "C" void __gcov_dump(void);
extern "C" void __gcov_reset(void);
static void coverage_dump() { __gcov_dump(); }
static void coverage_reset() { __gcov_reset(); }
// The caller's own counts, written now rather than when it exits, then zeroed (kernel.py's
// flush_coverage: a test session that measures coverage needs them before it ends). Each
// kernel object has its own copy of libgcov (loaded RTLD_LOCAL), so this writes this one's.
extern "C" __attribute__((visibility("default"))) void mslemu_coverage_flush() {
  __gcov_dump();
  __gcov_reset();
}
#else
static void coverage_dump() {}
static void coverage_reset() {}
#endif

// ------------------------------------------------------------------ function constants
// The values this object is specialized with (mslemu_rt.h): the file <this object>.fc that
// cache.specialized writes before the copy is there, one "N kind value" line per defined constant
// (kind: b, i, l, u or f). Read once, when the first function constant is initialized; an
// object without one is the specialization in which no constant is defined.
namespace {
struct FcTable {
  std::vector<FcRecord> rec;
  std::string error;
};
FcTable& fc_table() {
  static FcTable t = [] {
    FcTable t;
    Dl_info di;
    if (!dladdr((void*)&fc_table, &di) || !di.dli_fname) return t;
    std::string path = std::string(di.dli_fname) + ".fc";
    FILE* f = fopen(path.c_str(), "r");
    if (!f) return t;
    char line[256];
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
      ++lineno;
      int n;
      char kind;
      char value[200];
      if (sscanf(line, "%d %c %199s", &n, &kind, value) != 3 || n < 0 || n > 4096 || !strchr("biluf", kind)) {
        if (t.error.empty()) t.error = path + ":" + std::to_string(lineno) + ": not a function constant's value";
        continue;
      }
      if ((int)t.rec.size() <= n) t.rec.resize(n + 1, FcRecord{0, 0, 0, 0, 0});
      FcRecord& r = t.rec[n];
      r.defined = 1;
      r.kind = kind;
      if (kind == 'f') r.d = strtod(value, nullptr);
      else if (kind == 'u') r.u = strtoul(value, nullptr, 10);
      else r.l = strtol(value, nullptr, 10);
    }
    fclose(f);
    return t;
  }();
  return t;
}
}  // namespace

namespace mslemu {
FcRecord fc_record(int n) {
  FcTable& t = fc_table();
  return n >= 0 && n < (int)t.rec.size() ? t.rec[n] : FcRecord{0, 0, 0, 0, 0};
}
void fc_fail(int n, const char* why) {
  FcTable& t = fc_table();
  if (t.error.empty()) t.error = "function constant #" + std::to_string(n) + ": " + why;
}
}  // namespace mslemu

// Why this object could not take its function constants' values (kernel.py raises it), or null.
extern "C" __attribute__((visibility("default"))) const char* mslemu_fc_error() {
  FcTable& t = fc_table();
  return t.error.empty() ? nullptr : t.error.c_str();
}

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
#define PROBED TraceHeader
    {"struct", "TraceHeader", 0, sizeof(TraceHeader)},
    MSLEMU_TRACE_HEADER_FIELDS(MSLEMU_PROBE_FIELD, MSLEMU_PROBE_ARRAY)
#undef PROBED
#define PROBED TraceEvent
    {"struct", "TraceEvent", 0, sizeof(TraceEvent)},
    MSLEMU_TRACE_EVENT_FIELDS(MSLEMU_PROBE_FIELD, MSLEMU_PROBE_ARRAY)
#undef PROBED
#define PROBED TraceSnapshotHead
    {"struct", "TraceSnapshotHead", 0, sizeof(TraceSnapshotHead)},
    MSLEMU_TRACE_SNAPSHOT_FIELDS(MSLEMU_PROBE_FIELD, MSLEMU_PROBE_ARRAY)
#undef PROBED
#define PROBED TraceRegion
    {"struct", "TraceRegion", 0, sizeof(TraceRegion)},
    MSLEMU_TRACE_REGION_FIELDS(MSLEMU_PROBE_FIELD, MSLEMU_PROBE_ARRAY)
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
static const char* last_exec_barrier_file;  // the last barrier without mem_threadgroup
static int last_exec_barrier_line;
struct SimdgroupCount { uint32_t live, arrived; };  // lanes not yet returned; lanes waiting at a simd-group op
static SimdgroupCount sg_count[32];
static MslemuLaunch* launch;      // the launch description (in the shared region)
static MslemuResult* result;      // where this process reports (each worker has its own)
static bool in_worker;            // a worker process (else the caller itself, for debugging)
static uint8_t* returned_while_waited;  // per thread: returned while others waited at a barrier
static uint64_t schedule_rng;     // xorshift state of the random schedule, seeded per threadgroup
static uint32_t lockstep_cursor;  // next thread to run in the lockstep schedule
static int worker_index = 0, worker_count = 1;  // this process runs threadgroups worker_index, +worker_count, ...
static uintptr_t so_base;         // load address of the kernel's shared object: reported PCs are offsets from it
static TraceHeader* trace_buf;    // the launch's trace (in the shared region), or null
static bool tracing;              // the threadgroup being run is traced
static uint32_t trace_seq;        // next TraceEvent.seq of this threadgroup
#ifdef MSLEMU_UCONTEXT
static std::vector<ucontext_t> uctx;
static ucontext_t sched_uc;
#endif
// the device race check (opt-in, an instrumented kernel: see "device memory races" below)
static uintptr_t dev_lo, dev_span;  // the launch's device memory, [dev_lo, dev_lo + dev_span); 0: not checked
static uint32_t dev_sync;           // clock of the last threadgroup_barrier with mem_device in this threadgroup
static uint32_t sg_dev_sync[32];    // ... and of each simdgroup's last simdgroup_barrier with mem_device
static void dev_threadgroup_started();
static void dev_settle();             // a write that met another's is judged once it is done
static const void* volatile dev_caller;  // the kernel's address of its last access the device race check saw
static const char* dev_exec_barrier_file;  // the last barrier (of either kind) without mem_device
static int dev_exec_barrier_line;

// Threadgroup memory: the first half of the arena; the second half is a read-only block of
// zeros that an out-of-bounds access is pointed at (see mslemu::oob), inside the race
// shadow's range so that threadgroup accesses through it need no special case.
static const uint64_t TG_MEMORY_BYTES = 32768;  // per threadgroup: Apple's Metal feature set tables (hardware.py)
static char* oob_zone() { return ctx.arena + TG_MEMORY_BYTES; }
static bool in_oob_zone(const void* p) {
  return ctx.arena && (const char*)p >= oob_zone() && (const char*)p < oob_zone() + TG_MEMORY_BYTES;
}

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
static std::string site(const char* file, int line) { return fmt("%s:%d", file ? file : "?", line); }

// The facts of a report, as `key=value` lines after the text (mslemu_abi.h): what kernel.py
// turns into attributes, so that programs need not parse the wording.
struct Facts {
  std::string s;
  Facts& add(const char* key, const std::string& value) { s += key; s += '='; s += value; s += '\n'; return *this; }
  Facts& thread(const char* key, const Fiber* f) {
    return add(key, fmt("%u,%u,%u,%u,%u,%u", f->pos[0], f->pos[1], f->pos[2], f->tid, f->sg, f->lane));
  }
  Facts& pc(const char* key, const void* p) { return add(key, fmt("%lx", (unsigned long)((uintptr_t)p - so_base))); }
  Facts& where(const Fiber* f) {  // the threadgroup and, if one is running, the thread
    add("threadgroup", fmt("%u,%u,%u", ctx.tg_pos[0], ctx.tg_pos[1], ctx.tg_pos[2]));
    return f ? thread("thread", f) : *this;
  }
};

static void write_report(char* buf, size_t size, const std::string& text, const Facts& facts) {
  snprintf(buf, size, "%s%c%s", text.c_str(), MSLEMU_FACTS_SEPARATOR, facts.s.c_str());
}

static void flush_pending_oob();
static void resolve_pending_race();

// The end of this process's run with an error. A pending out-of-bounds read happened first,
// so it is the one reported.
[[noreturn]] static void finish(int kind, const std::string& m, const Facts& facts = Facts()) {
  if (kind != E_OOB) flush_pending_oob();
  result->status = kind;
  write_report(result->msg, sizeof result->msg, m, facts);
  if (!in_worker) fprintf(stderr, "%s\n", m.c_str());  // in-process mode (debugging only): the run ends here
  coverage_dump();
  _exit(kind);
}

[[noreturn]] void mslemu::fail(int kind, const char* f, ...) {
  char b[8192];
  va_list ap; va_start(ap, f); vsnprintf(b, sizeof b, f, ap); va_end(ap);
  std::string m = b;
  if (ctx.cur) m += " (in " + tg_str() + ", " + th_str(ctx.cur) + ")";
  finish(kind, m, Facts().where(ctx.cur));
}

// PortabilityWarnings: records (text, facts) in warn_msg, separated by
// MSLEMU_RECORD_SEPARATOR, once per source line that caused them
static void add_warning(const char* file, int line, const std::string& text, const Facts& facts) {
  static const char* seen_file[64];
  static int seen_line[64], nseen;
  for (int i = 0; i < nseen; ++i) if (seen_line[i] == line && seen_file[i] == file) return;
  if (nseen < 64) { seen_file[nseen] = file; seen_line[nseen] = line; ++nseen; }
  char rec[4096];
  write_report(rec, sizeof rec, text, facts);
  size_t used = strlen(result->warn_msg), n = strlen(rec);
  if (used + n + 2 > sizeof result->warn_msg) return;
  if (used) result->warn_msg[used++] = MSLEMU_RECORD_SEPARATOR;
  memcpy(result->warn_msg + used, rec, n + 1);
  result->warn = 1;
}

// warnings from the shim's library code (e.g. a simd-group read of an inactive lane)
void mslemu::portability(const char* file, int line, const char* f, ...) {
  char b[1024];
  va_list ap; va_start(ap, f); vsnprintf(b, sizeof b, f, ap); va_end(ap);
  add_warning(file, line, b, Facts().add("kind", "library").where(ctx.cur).add("site", site(file, line)));
}

// the Metal name of a collective, for reports (quad-group functions: "quad_" + the name)
static const char* op_name(int op) {
  static const char* names[] = {"?", "sum", "product", "max", "min", "shuffle", "shuffle_xor", "shuffle_up", "shuffle_down",
                                "broadcast", "broadcast_first", "prefix_exclusive_sum", "prefix_inclusive_sum", "all",
                                "any", "simdgroup matrix multiply", "and", "or", "xor", "shuffle_rotate_down",
                                "shuffle_rotate_up", "is_first", "prefix_exclusive_product", "prefix_inclusive_product",
                                "ballot", "active_threads_mask", "shuffle_and_fill_up", "shuffle_and_fill_down"};
  static_assert(sizeof names / sizeof *names == OP_FILL_DOWN + 1, "a name for every op code of mslemu_abi.h");
  static char buf[8][48];  // a few names live at once in one message
  static int next;
  if (op == OP_SIMD_BARRIER) return "simdgroup_barrier";
  if (op == OP_TENSOR_MATMUL2D) return "matmul2d::run";
  if (op == OP_MMA) return names[OP_MMA];
  bool quad = op > OP_QUAD && op - OP_QUAD <= OP_FILL_DOWN;
  int base = quad ? op - OP_QUAD : op;
  if (base <= 0 || base > OP_FILL_DOWN) return "simd-group function";
  char* out = buf[next++ % 8];
  snprintf(out, sizeof buf[0], "%s_%s", quad ? "quad" : "simd", names[base]);
  return out;
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

// ------------------------------------------------------------------ trace (opt-in)
// Every call is behind `tracing` (false unless the launch asked for a trace and selected
// the threadgroup being run), so an untraced run pays one predictable branch per
// synchronization point and nothing per memory access.
static uint64_t so_offset(const void* p) { return p ? (uint64_t)((uintptr_t)p - so_base) : 0; }

static void trace_event(int kind, const Fiber* f, int op, int flags, const char* file, int line, uint32_t blob = 0) {
  uint64_t i = __atomic_fetch_add(&trace_buf->event_count, 1, __ATOMIC_RELAXED);
  if (i >= trace_buf->event_capacity) return;  // counted, so the reader knows events were dropped
  TraceEvent* e = (TraceEvent*)((char*)trace_buf + trace_buf->events_offset) + i;
  uint32_t lin = (ctx.tg_pos[2] * launch->ntg[1] + ctx.tg_pos[1]) * launch->ntg[0] + ctx.tg_pos[0];
  *e = TraceEvent{lin, trace_seq++, (uint16_t)f->tid, (uint8_t)kind, (uint8_t)flags, op, line, blob, so_offset(file)};
}

static bool trace_selects(uint64_t linear_tg) {
  if (!trace_buf) return false;
  if (!trace_buf->select_bits) return true;
  if (linear_tg >= trace_buf->select_bits) return false;
  const uint8_t* bits = (const uint8_t*)trace_buf + trace_buf->select_offset;
  return (bits[linear_tg >> 3] >> (linear_tg & 7)) & 1;
}

// threadgroup memory and its last writers, as the barrier being released sees them (the
// race shadow's record); returns the blob offset + 1, or 0 if it did not fit
static uint32_t trace_snapshot() {
  uint32_t bytes = (uint32_t)ctx.arena_used, nreg = (uint32_t)tg_region_count;
  uint64_t padded = (bytes + 7) / 8 * 8;
  uint64_t need = sizeof(TraceSnapshotHead) + nreg * sizeof(TraceRegion) + padded + bytes * 2;  // a writer per byte
  need = (need + 7) / 8 * 8;
  uint64_t at = __atomic_fetch_add(&trace_buf->blob_used, need, __ATOMIC_RELAXED);
  if (at + need > trace_buf->blob_capacity || at + 1 > UINT32_MAX) return 0;
  char* p = (char*)trace_buf + trace_buf->blob_offset + at;
  *(TraceSnapshotHead*)p = TraceSnapshotHead{bytes, nreg};
  TraceRegion* reg = (TraceRegion*)(p + sizeof(TraceSnapshotHead));
  for (uint32_t i = 0; i < nreg; ++i) {
    const TgRegion& r = tg_regions[i];
    reg[i] = TraceRegion{so_offset(r.name), (uint32_t)(r.p - ctx.arena), (uint32_t)r.size, r.esize, r.nd, {0, 0, 0, 0}};
    for (uint32_t k = 0; k < r.nd; ++k) reg[i].dims[k] = r.dims[k];
  }
  char* mem = (char*)(reg + nreg);
  memcpy(mem, ctx.arena, bytes);
  uint16_t* writers = (uint16_t*)(mem + padded);
  const Shadow* sh = (const Shadow*)ctx.shadow;
  for (uint32_t k = 0; k < bytes; ++k) {
    const Shadow& w = sh[k];
    writers[k] = w.w_stamp < ctx.tg_start ? 0xffff : (uint16_t)(w.w_tid | (w.w_stamp >= ctx.tg_sync ? 0x8000 : 0));
  }
  return (uint32_t)(at + 1);
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

static std::string thread_ids(int state) {
  std::vector<uint32_t> ids;
  for (uint32_t i = 0; i < tg_threads; ++i) if (fibers[i].state == state) ids.push_back(i);
  return id_list(ids);
}

// A data race with a thread that waits at a barrier is held back until the barrier is
// released (resolve_pending_race): if the racing thread returned meanwhile, the barrier is
// the defect (one under a condition that only some threads meet); if it arrived, the race
// is real.
struct PendingRace { bool set; uint32_t racer; const char* bfile; int bline; std::string text; Facts facts; };
static PendingRace pending_race;

static void resolve_pending_race() {
  if (!pending_race.set) return;
  PendingRace& r = pending_race;
  ctx.cur = nullptr;
  if (!returned_while_waited[r.racer]) finish(E_RACE, r.text, r.facts);
  std::string gone = thread_ids(F_DONE), waiting = thread_ids(F_BARRIER);
  Facts facts = r.facts;
  facts.add("sites", site(r.bfile, r.bline)).add("not_reached", gone).add("waiting", waiting);
  finish(E_BARRIER, "threadgroup_barrier at " + site(r.bfile, r.bline) + " in " + tg_str() +
                        " is not reached by every thread: threads " + gone + " returned without reaching it while " +
                        "threads " + waiting + " waited there (is it under a condition only some threads meet?); "
                        "every thread of a threadgroup must reach each threadgroup_barrier. It showed as a data race: " +
                        r.text, facts);
}

static bool same_file(const char* a, const char* b) { return a == b || (a && b && !strcmp(a, b)); }

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
                            "); every live thread of a threadgroup must reach the same barrier:" + describe_waiting(-1),
             Facts().where(nullptr).add("sites", site(first->wfile, first->wline) + ";" + site(f->wfile, f->wline)));
    }
  }
  resolve_pending_race();
  if (live_threads < tg_threads && !returned_warned) {
    returned_warned = true;
    std::string gone = thread_ids(F_DONE);
    add_warning(first->wfile, first->wline,
                 fmt("threads %s of %s returned before the threadgroup_barrier at %s that the other threads waited at; "
                     "the Metal specification's rule (a barrier must be encountered by all threads of the threadgroup "
                     "executing the kernel) does not say whether threads that returned still count, and no Apple "
                     "document says what a GPU does; the emulator releases the barrier for the threads still running "
                     "(not portable)",
                     gone.c_str(), tg_str().c_str(), site(first->wfile, first->wline).c_str()),
                 Facts().add("kind", "returned-before-barrier").where(nullptr)
                     .add("site", site(first->wfile, first->wline)).add("threads", gone));
  }
  if (tracing)
    trace_event(TR_BARRIER_RELEASE, ctx.cur, 0, flags, first->wfile, first->wline, trace_buf->snapshots ? trace_snapshot() : 0);
  // every barrier orders execution; one with mem_threadgroup also orders threadgroup memory
  ctx.exec_sync = ++ctx.clock;
  if (flags & 1) dev_sync = ctx.clock;  // mem_flags::mem_device (the device race check)
  else { dev_exec_barrier_file = first->wfile; dev_exec_barrier_line = first->wline; }
  if (flags & 2) ctx.tg_sync = ctx.clock;
  else { last_exec_barrier_file = first->wfile; last_exec_barrier_line = first->wline; }
  for (uint32_t i = 0; i < tg_threads; ++i) if (fibers[i].state == F_BARRIER) fibers[i].state = F_READY;
  barrier_arrivals = 0;
}

// MLX's results assume a simdgroup counts at a threadgroup barrier once its active lanes
// arrive: lanes that branched around the barrier and wait at a simd-group function after it
// do not hold it up (MLX's gemv_t at an edge). No Apple document says a GPU does this; the
// specification requires every thread of the threadgroup at the barrier. To reproduce MLX's
// results the emulator behaves so, and warns. When that is the only thing keeping the threadgroup from
// running, the barrier is released for the threads that reached it, with a warning.
// "After it" is read from the source: the simd-group function is later in the same file.
// Lanes waiting at one before the barrier (a simd-group function in a branch, the rest of
// the simdgroup at the barrier behind it) stay a SimdgroupDivergenceError: which lanes
// would be active there is up to the hardware.
static bool release_divergent_barrier() {
  if (!barrier_arrivals) return false;
  const Fiber* at_barrier = nullptr;
  const Fiber* at_simd = nullptr;
  for (uint32_t sg = 0; sg < ctx.nsg; ++sg) {
    uint32_t base = sg * 32, n = tg_threads - base < 32 ? tg_threads - base : 32;
    const Fiber *b = nullptr, *w = nullptr;
    for (uint32_t i = 0; i < n; ++i) {
      const Fiber& f = fibers[base + i];
      if (f.state == F_BARRIER) b = &f;
      else if (f.state == F_SIMD && f.wop != OP_MMA) w = &f;
      else if (f.state != F_DONE) return false;
    }
    if (w && !b) return false;  // a whole simdgroup waits elsewhere: that is a deadlock
    if (b && !at_barrier) at_barrier = b;
    if (w && !at_simd) at_simd = w;
  }
  if (!at_simd) return false;
  for (uint32_t i = 0; i < tg_threads; ++i) {
    const Fiber& f = fibers[i];
    if (f.state == F_SIMD && (!same_file(f.wfile, at_barrier->wfile) || f.wline <= at_barrier->wline)) return false;
  }
  std::string barrier_site = site(at_barrier->wfile, at_barrier->wline), simd_site = site(at_simd->wfile, at_simd->wline);
  add_warning(at_barrier->wfile, at_barrier->wline,
              fmt("threadgroup_barrier at %s is reached by part of simdgroup %u while its other lanes wait at %s at %s "
                  "(in %s): those lanes are still running, so this breaks the Metal specification's rule that a barrier "
                  "be encountered by all threads of the threadgroup executing the kernel; MLX's results assume the "
                  "barrier is released once the lanes of the simdgroup that reach it arrive, and the emulator releases "
                  "it so to reproduce them, but no Apple document says a GPU does (not portable)",
                  barrier_site.c_str(), at_simd->sg, op_name(at_simd->wop), simd_site.c_str(), tg_str().c_str()),
              Facts().add("kind", "divergent-barrier").where(nullptr).add("site", barrier_site)
                  .add("sites", barrier_site + ";" + simd_site));
  release_barrier();
  return true;
}

void mslemu::barrier(int flags, const char* file, int line) {
  Fiber* f = ctx.cur;
  flush_pending_oob();
  if (f->nq) mma_flush(file, line);
  dev_settle();
  f->state = F_BARRIER; f->wfile = file; f->wline = line; f->wop = flags;
  if (tracing) trace_event(TR_BARRIER_ARRIVE, f, 0, flags, file, line);
  if (++barrier_arrivals == live_threads) release_barrier();
  else yield_();
  f->state = F_READY;
  if (tracing) trace_event(TR_BARRIER_DEPART, f, 0, flags, file, line);
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
                        op_name(b->wop), site(b->wfile, b->wline).c_str()) + describe_waiting(sg),
         Facts().where(nullptr).add("simdgroup", fmt("%u", sg))
             .add("sites", site(a->wfile, a->wline) + ";" + site(b->wfile, b->wline))
             .add("operation", std::string(op_name(a->wop)) + ";" + op_name(b->wop)));
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
  else {
    ctx.sg_sync[sg] = ++ctx.clock;
    if (first->carg & 1) sg_dev_sync[sg] = ctx.clock;  // simdgroup_barrier(mem_flags::mem_device)
    else { dev_exec_barrier_file = first->wfile; dev_exec_barrier_line = first->wline; }
  }
  for (uint32_t i = 0; i < n; ++i) if (lanes[i]) lanes[i]->state = F_READY;
  sg_count[sg].arrived = 0;
}

void mslemu::collective(int op, const char* file, int line, CombineFn fn) {
  Fiber* f = ctx.cur;
  flush_pending_oob();
  if (f->nq && op != OP_MMA) mma_flush(file, line);
  dev_settle();
  f->state = F_SIMD; f->wfile = file; f->wline = line; f->wop = op; f->cextra = (const void*)fn;
  if (tracing) trace_event(TR_SIMD_ARRIVE, f, op, 0, file, line);
  if (++sg_count[f->sg].arrived == sg_count[f->sg].live) complete_sg(f->sg);
  else yield_();
  f->state = F_READY;
  if (tracing) trace_event(TR_SIMD_DEPART, f, op, 0, file, line);
}

void mslemu::simd_barrier(int flags, const char* file, int line) {
  ctx.cur->carg = flags;
  collective(OP_SIMD_BARRIER, file, line, nullptr);
}

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
  if (off + bytes > TG_MEMORY_BYTES)
    fail(E_LAUNCH, "threadgroup memory exhausted: '%s' needs %llu bytes at offset %llu, but Metal provides %llu bytes per threadgroup (Apple's feature set tables)",
         name, (unsigned long long)bytes, (unsigned long long)off, (unsigned long long)TG_MEMORY_BYTES);
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

// the declared name of the threadgroup variable holding p ("" if none)
static std::string tg_region_name(const void* p) {
  const char* c = (const char*)p;
  for (int i = 0; i < tg_region_count; ++i)
    if (c >= tg_regions[i].p && c < tg_regions[i].p + tg_regions[i].size) return tg_regions[i].name;
  return "";
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

// An access outside its buffer. Whether it reads or writes is not known when the pointer is
// checked (operator[] hands out a reference), so the check points it at the read-only zeros
// of oob_zone() and remembers it: a write faults there (on_signal reports "write"); a read
// goes through, and is reported as one at the next point where the runtime runs again (the
// next check, barrier or simd-group function, the thread's return, a signal).
struct OobAccess {
  bool pending;          // reported neither as a read nor as a write yet
  bool valid;            // `where` describes the last out-of-bounds access
  std::string where;     // "'name': element index ... at {{pc}} in threadgroup ..., thread ..."
  Facts facts;
};
static OobAccess last_oob;

[[noreturn]] static void report_oob(const char* access) {
  last_oob.pending = false;
  ctx.cur = nullptr;
  std::string m = std::string("out-of-bounds ") + access + " " + last_oob.where;
  if (ctx.oob_lenient && !strcmp(access, "write to"))
    m += " (reads outside buffers were allowed by oob_reads='warn', writes are not)";
  Facts f = last_oob.facts;
  f.add("access", !strcmp(access, "read of") ? "read" : !strcmp(access, "write to") ? "write" : "unknown");
  finish(E_OOB, m, f);
}

// the pending out-of-bounds access turned out to be a read
static void flush_pending_oob() {
  if (!last_oob.pending) return;
  if (!ctx.oob_lenient) report_oob("read of");
  last_oob.pending = false;
  if (!result->oob_msg[0]) {
    Facts f = last_oob.facts;
    write_report(result->oob_msg, sizeof result->oob_msg, last_oob.where, f.add("kind", "oob-read").add("access", "read"));
  }
}

void* mslemu::oob(const void* pc, const void* p, const void* lo, const void* hi, size_t elem, const char* name, int) {
  flush_pending_oob();
  Facts f;
  f.where(ctx.cur).pc("site_pc", pc).add("buffer", name).add("element_size", fmt("%zu", elem));
  std::string where;
  if (!lo && !hi) {
    where = fmt("'%s': address %p is not inside any bound buffer at ", name, p) + pcs(pc);
  } else {
    long long idx = ((const char*)p - (const char*)lo);
    long long n = ((const char*)hi - (const char*)lo) / (long long)elem;
    if (idx >= 0) idx /= (long long)elem; else idx = -((-idx + (long long)elem - 1) / (long long)elem);
    where = fmt("'%s': element index %lld is outside the valid range [0, %lld) (%zu-byte elements) at ",
                name, idx, n, elem) + pcs(pc);
    f.add("index", fmt("%lld", idx)).add("length", fmt("%lld", n));
  }
  where += " in " + tg_str() + ", " + th_str(ctx.cur);
  last_oob = {true, true, where, f};
  if (elem > TG_MEMORY_BYTES) report_oob("access to");  // too large for the zone: read or write unknown
  return oob_zone();
}

static const char* race_verb(int kind, bool me) {
  // kind 1: I read what the other wrote; 2: I write what the other wrote; 3: I write what the other read
  if (me) return kind == 1 ? "reads" : "writes";
  return kind == 3 ? "read" : "wrote";
}

void mslemu::race(int kind, const void* p, const void* pc_now, uint32_t other, uint32_t pc_other_off) {
  if (in_oob_zone(p)) return;  // an out-of-bounds access, reported as such
  const void* pc_other = (const void*)(ctx.pc_base + pc_other_off);
  Fiber* me = ctx.cur;
  Fiber* o = &fibers[other];
  if (pending_race.set && o->state == F_BARRIER) return;  // one held-back race is enough
  std::string element = tg_element(p);
  std::string m = fmt("data race on threadgroup memory %s in %s: ", element.c_str(), tg_str().c_str());
  m += th_str(me) + " " + race_verb(kind, true) + " it at " + pcs(pc_now) + ", but " + th_str(o) + " " +
       race_verb(kind, false) + " it at " + pcs(pc_other) + " with no threadgroup_barrier(mem_flags::mem_threadgroup) in between";
  Facts f;
  f.where(me).pc("site_pc", pc_now).add("memory", tg_region_name(p)).add("element", element)
      .add("access", kind == 1 ? "read" : "write").thread("other_thread", o).pc("other_site_pc", pc_other)
      .add("other_access", kind == 3 ? "read" : "write");
  if (o->state == F_BARRIER) {  // decided when that barrier is released
    pending_race = {true, me->tid, o->wfile, o->wline, m, f};
    return;
  }
  finish(E_RACE, m, f);
}

void mslemu::exec_ordered(int kind, const void* p, const void* pc_now, uint32_t other, uint32_t pc_other_off) {
  if (in_oob_zone(p)) return;
  const void* pc_other = (const void*)(ctx.pc_base + pc_other_off);
  Fiber* o = &fibers[other];
  std::string element = tg_element(p), barrier = site(last_exec_barrier_file, last_exec_barrier_line);
  // once per pair of code addresses (the add_warning key is a file and a line otherwise)
  add_warning((const char*)pc_now, (int)pc_other_off,
              th_str(ctx.cur) + " " + race_verb(kind, true) + " threadgroup memory " + element + " at " + pcs(pc_now) +
                  " after " + th_str(o) + " " + race_verb(kind, false) + " it at " + pcs(pc_other) +
                  ", ordered only by a threadgroup_barrier without mem_flags::mem_threadgroup (the last one at " +
                  barrier + "): the Metal specification orders threadgroup memory only at a barrier with "
                  "mem_flags::mem_threadgroup; MLX's results assume every barrier orders it, and the emulator orders it "
                  "so to reproduce them, but no Apple document says a GPU does (not portable)",
              Facts().add("kind", "barrier-without-memory-order").where(ctx.cur).pc("site_pc", pc_now)
                  .add("memory", tg_region_name(p)).add("element", element).add("access", kind == 1 ? "read" : "write")
                  .thread("other_thread", o).pc("other_site_pc", pc_other)
                  .add("other_access", kind == 3 ? "read" : "write").add("site", barrier));
}

void mslemu::uninit_read(const void* p, const void* pc) {
  static uint64_t reported_gen = 0;
  if (in_oob_zone(p) || result->uninit_msg[0] || reported_gen == ctx.tg_gen + 1) return;
  reported_gen = ctx.tg_gen + 1;
  std::string element = tg_element(p);
  std::string m = fmt("%s reads threadgroup memory %s at ", th_str(ctx.cur).c_str(), element.c_str()) + pcs(pc) +
                  " in " + tg_str() +
                  " before any thread of the threadgroup wrote it; threadgroup memory starts with undefined contents "
                  "on a GPU" + fmt(" (the emulator fills it with 0x%02X bytes: NaN as a float, -1 or the largest value "
                                   "as an integer)", (unsigned)MSLEMU_TG_FILL_BYTE);
  write_report(result->uninit_msg, sizeof result->uninit_msg, m,
               Facts().add("kind", "uninitialized-read").where(ctx.cur).pc("site_pc", pc)
                   .add("memory", tg_region_name(p)).add("element", element));
}

// ------------------------------------------------------------------ device memory races (opt-in)
// A kernel built with device race checking (build.py: the compiler's -fsanitize=thread
// instrumentation, without its runtime) calls the __tsan_* functions below before every
// load, store and atomic operation; those that touch the launch's device memory are
// checked against a shadow record of that byte's last accesses, as threadgroup memory is,
// with what the specification orders for device memory: within a threadgroup, a
// threadgroup_barrier with mem_flags::mem_device (a simdgroup_barrier with it, within the
// simdgroup); across the threadgroups of one dispatch nothing does, except that atomic
// operations on one location do not race with each other. An access ordered only by a
// barrier without mem_device is a warning; one ordered by nothing is a DataRaceError. All
// threadgroups run in one process (kernel.py), so the record of every threadgroup that
// touched a byte is there when the next one does.
//
// A record per byte (an access is recorded at its first byte and every 4 bytes after it),
// each slot the clock value of the access (its threadgroup: the one that started last
// before it), the thread and the code address. The slots: the last plain write, the last
// atomic write, and two reads (as threadgroup memory keeps two readers), a read's tid with
// DEV_ATOMIC set when it was an atomic load.
enum { DEV_W, DEV_AW, DEV_R, DEV_R2 };
enum DevKind { DEV_READ, DEV_WRITE, DEV_ATOMIC_READ, DEV_ATOMIC_WRITE };
static const uint16_t DEV_ATOMIC = 0x8000;
struct DevShadow { uint32_t stamp[4], pc[4]; uint16_t tid[4]; };
static DevShadow* dev_shadow;
static void* zalloc(size_t n);
// (clock value at its start, linear index) of each threadgroup this process ran, in order
static std::vector<std::pair<uint32_t, uint64_t>> dev_tgs;

static void dev_threadgroup_started() {
  uint64_t lin = ((uint64_t)ctx.tg_pos[2] * launch->ntg[1] + ctx.tg_pos[1]) * launch->ntg[0] + ctx.tg_pos[0];
  dev_tgs.push_back({ctx.tg_start, lin});
}

// the device memory of the launch and its shadow (a launch that asked for the check)
static void allocate_device_shadow() {
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (int i = 0; i < MSLEMU_MAX_BUFFERS; ++i) {
    uintptr_t b = (uintptr_t)launch->buf[i];
    if (!b || !launch->buf_size[i]) continue;
    if (b < lo) lo = b;
    if (b + launch->buf_size[i] > hi) hi = b + launch->buf_size[i];
  }
  if (hi <= lo) return;  // no device memory: nothing to check
  uint64_t need = (uint64_t)(hi - lo) * sizeof(DevShadow);
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0 && need > (uint64_t)pages * (uint64_t)page / 2)
    finish(E_LAUNCH, fmt("device_races: the launch's %llu bytes of device memory need %llu MiB of shadow memory (%zu "
                         "bytes per byte), more than half of this machine's memory; check a smaller problem",
                         (unsigned long long)(hi - lo), (unsigned long long)(need >> 20), sizeof(DevShadow)));
  dev_shadow = (DevShadow*)zalloc(need);
  dev_tgs.clear();
  dev_tgs.reserve((size_t)launch->ntg[0] * launch->ntg[1] * launch->ntg[2]);
  dev_lo = lo;
  dev_span = hi - lo;
}

// thread `tid` of the threadgroup of linear index `lin`, as a Fiber for the reports
static Fiber dev_fiber(uint64_t lin, uint32_t tid, uint32_t tg[3]) {
  tg[0] = (uint32_t)(lin % launch->ntg[0]);
  tg[1] = (uint32_t)(lin / launch->ntg[0] % launch->ntg[1]);
  tg[2] = (uint32_t)(lin / ((uint64_t)launch->ntg[0] * launch->ntg[1]));
  uint32_t n[3];
  for (int i = 0; i < 3; ++i) {  // an edge threadgroup of dispatchThreads is smaller (size_threadgroup)
    n[i] = launch->tptg[i];
    uint32_t start = tg[i] * launch->tptg[i];
    if (launch->dispatch_threads && start + n[i] > launch->grid[i]) n[i] = launch->grid[i] - start;
  }
  Fiber f{};
  f.tid = tid; f.lane = tid % 32; f.sg = tid / 32;
  f.pos[0] = tid % n[0]; f.pos[1] = tid / n[0] % n[1]; f.pos[2] = tid / (n[0] * n[1]);
  return f;
}

// the linear index of the threadgroup that made an access at clock value `stamp`
static uint64_t dev_tg_of(uint32_t stamp) {
  size_t lo = 0, hi = dev_tgs.size();
  while (hi - lo > 1) {
    size_t mid = (lo + hi) / 2;
    (dev_tgs[mid].first <= stamp ? lo : hi) = mid;
  }
  return dev_tgs.empty() ? 0 : dev_tgs[lo].second;
}

// The element of device memory at p, as the first buffer bound there names it ("'x'[12]",
// by the access's size), with every other binding of that memory; `name` gets the first
// buffer's name, `offset` the byte offset in it.
static std::string dev_element(const void* p, int size, std::string* name, uint64_t* offset) {
  std::string also;
  *offset = 0;
  name->clear();
  for (int i = 0; i < MSLEMU_MAX_BUFFERS; ++i) {
    const char* b = (const char*)ctx.buf[i];
    if (!b || (const char*)p < b || (const char*)p >= b + ctx.buf_size[i]) continue;
    const char* n = ctx.buf_name[i] ? ctx.buf_name[i] : "?";
    if (name->empty()) {
      *name = n;
      *offset = (uint64_t)((const char*)p - b);
    } else {
      also += fmt(", also bound as '%s'", n);
    }
  }
  if (name->empty()) return "between the buffers";
  std::string e = *offset % size ? fmt("'%s' (byte offset %llu)", name->c_str(), (unsigned long long)*offset)
                                 : fmt("'%s'[%llu]", name->c_str(), (unsigned long long)(*offset / size));
  return e + fmt(" (a %d-byte access%s)", size, also.c_str());
}

static const char* dev_verb(int kind) {
  return kind == DEV_READ ? "reads" : kind == DEV_WRITE ? "writes" : kind == DEV_ATOMIC_READ ? "atomically reads"
                                                                                           : "atomically writes";
}
static const char* dev_past(int slot, uint16_t tid) {
  if (slot == DEV_W) return "wrote";
  if (slot == DEV_AW) return "atomically wrote";
  return tid & DEV_ATOMIC ? "atomically read" : "read";
}

// A plain write that meets another thread's unordered plain write is judged once its own
// store is done (the callback runs before it), at the next point the runtime runs (the
// thread's next access, barrier, simd-group function or return): if the two writes left the
// same bytes, the result does not depend on their order and it is a warning (a data race by
// the specification all the same); else a DataRaceError.
struct DevPendingWrite {
  bool set;
  const char* p;  // the access
  int size;
  unsigned char before[16];  // what the other write left
  const void* pc; uint32_t other_pc;
  std::string text, same_text;  // the race's message; the warning's
  Facts facts;
  bool other_waits; const char* bfile; int bline;  // the other thread waits at a barrier (same threadgroup)
};
static DevPendingWrite dev_pending;

static void dev_settle() {
  if (!dev_pending.set) return;
  DevPendingWrite& w = dev_pending;
  w.set = false;
  if (!memcmp(w.p, w.before, w.size)) {
    Facts f = w.facts;
    add_warning((const char*)w.pc, (int)w.other_pc, w.same_text, f.add("kind", "same-value-write-race"));
    return;
  }
  if (w.other_waits) {  // decided when that barrier is released (resolve_pending_race)
    if (!pending_race.set) pending_race = {true, ctx.cur->tid, w.bfile, w.bline, w.text, w.facts};
    return;
  }
  ctx.cur = nullptr;
  finish(E_RACE, w.text, w.facts);
}

// Two accesses to one byte, at least one a plain write or one atomic and one not, that
// nothing orders: a DataRaceError (held back, like a threadgroup race, while the other
// thread waits at a barrier); ordered only by a barrier without mem_device: a warning.
static void dev_conflict(const void* p, int size, int kind, const void* pc, const DevShadow& s, int slot,
                         const char* base) {
  Fiber* me = ctx.cur;
  uint32_t stamp = s.stamp[slot], other_tid = s.tid[slot] & ~DEV_ATOMIC;
  bool other_tg = stamp < ctx.tg_start;
  bool exec_only = false;
  if (!other_tg) {
    if (other_tid == me->tid || stamp < dev_sync) return;
    bool same_sg = other_tid / 32 == me->sg;
    if (same_sg && stamp < sg_dev_sync[me->sg]) return;
    exec_only = stamp < ctx.exec_sync || (same_sg && stamp < ctx.sg_sync[me->sg]);
  }
  const void* pc_other = (const void*)(ctx.pc_base + s.pc[slot]);
  uint32_t otg[3] = {ctx.tg_pos[0], ctx.tg_pos[1], ctx.tg_pos[2]};
  Fiber o = other_tg ? dev_fiber(dev_tg_of(stamp), other_tid, otg) : fibers[other_tid];
  uint64_t offset;
  std::string buffer;
  std::string element = dev_element(p, size, &buffer, &offset);
  std::string other_tg_str = fmt("threadgroup (%u,%u,%u)", otg[0], otg[1], otg[2]);
  Facts f;
  f.where(me).pc("site_pc", pc).add("memory", buffer).add("element", element.substr(0, element.find(" (a ")))
      .add("element_size", fmt("%d", size)).add("access", kind == DEV_READ || kind == DEV_ATOMIC_READ ? "read" : "write")
      .thread("other_thread", &o).pc("other_site_pc", pc_other)
      .add("other_access", slot == DEV_R || slot == DEV_R2 ? "read" : "write")
      .add("other_threadgroup", fmt("%u,%u,%u", otg[0], otg[1], otg[2]));
  // a write after another thread's read, across an execution barrier: ordered (mslemu.h: conflict)
  if (exec_only && kind == DEV_WRITE && (slot == DEV_R || slot == DEV_R2)) return;
  if (exec_only) {
    std::string barrier = site(dev_exec_barrier_file, dev_exec_barrier_line);
    add_warning((const char*)pc, (int)s.pc[slot],
                th_str(me) + " " + dev_verb(kind) + " device memory " + element + " at " + pcs(pc) + " after " +
                    th_str(&o) + " " + dev_past(slot, s.tid[slot]) + " it at " + pcs(pc_other) +
                    ", ordered only by a barrier without mem_flags::mem_device (the last one at " + barrier +
                    "): the Metal specification orders device memory at a barrier only with mem_flags::mem_device "
                    "(not portable)",
                f.add("kind", "device-barrier-without-memory-order").add("site", barrier));
    return;
  }
  std::string m = "data race on device memory " + element + ": " + th_str(me) + " of " + tg_str() + " " +
                  dev_verb(kind) + " it at " + pcs(pc) + ", but " + th_str(&o) + " of " + other_tg_str + " " +
                  dev_past(slot, s.tid[slot]) + " it at " + pcs(pc_other) +
                  (other_tg ? std::string(", and nothing orders two threadgroups' accesses within one dispatch but "
                                          "atomic operations on both sides")
                            : std::string(" with no threadgroup_barrier(mem_flags::mem_device) in between"));
  bool waits = !other_tg && o.state == F_BARRIER;
  if (slot == DEV_W && kind == DEV_WRITE && size <= 16) {  // judged when this write is done (dev_settle)
    if (dev_pending.set) return;
    DevPendingWrite& w = dev_pending;
    w.set = true; w.p = base; w.size = size; w.pc = pc; w.other_pc = s.pc[slot];
    memcpy(w.before, base, size);
    w.text = m; w.facts = f; w.other_waits = waits; w.bfile = o.wfile; w.bline = o.wline;
    w.same_text = th_str(me) + " of " + tg_str() + " writes device memory " + element + " at " + pcs(pc) +
                  ", as " + th_str(&o) + " of " + other_tg_str + " did at " + pcs(pc_other) +
                  (other_tg ? ", two threadgroups that nothing orders within one dispatch"
                            : ", with no threadgroup_barrier(mem_flags::mem_device) in between") +
                  ": a data race by the Metal specification, but both wrote the same bytes, so the result does not "
                  "depend on which write lands last (not portable)";
    return;
  }
  if (waits) {  // decided when that barrier is released (resolve_pending_race)
    if (!pending_race.set) pending_race = {true, me->tid, o.wfile, o.wline, m, f};
    return;
  }
  ctx.cur = nullptr;
  finish(E_RACE, m, f);
}

// the check's code, in a section of its own (in_device_check, for the timeout's report)
#define MSLEMU_DEVCHECK __attribute__((section("mslemu_devcheck"), used))
MSLEMU_DEVCHECK static void dev_access(const void* p, int size, int kind, const void* pc, const char* base) {
  Fiber* me = ctx.cur;
  if (!me) return;  // the runtime's own accesses, outside any thread
  DevShadow& s = dev_shadow[(uintptr_t)p - dev_lo];
  bool write = kind == DEV_WRITE || kind == DEV_ATOMIC_WRITE, atomic = kind >= DEV_ATOMIC_READ;
  if (s.stamp[DEV_W]) dev_conflict(p, size, kind, pc, s, DEV_W, base);  // a plain write conflicts with everything
  if (!atomic && s.stamp[DEV_AW]) dev_conflict(p, size, kind, pc, s, DEV_AW, base);
  if (write) {  // with the reads, but an atomic write not with atomic reads
    for (int r = DEV_R; r <= DEV_R2; ++r)
      if (s.stamp[r] && !(atomic && (s.tid[r] & DEV_ATOMIC))) dev_conflict(p, size, kind, pc, s, r, base);
  }
  uint32_t pco = (uint32_t)((uintptr_t)pc - ctx.pc_base);
  uint16_t t = (uint16_t)(me->tid | (atomic ? DEV_ATOMIC : 0));
  int slot = kind == DEV_WRITE ? DEV_W : kind == DEV_ATOMIC_WRITE ? DEV_AW : -1;
  if (slot < 0) {
    // a read: the last one is kept while it still matters (another threadgroup's always does;
    // this one's until a barrier with mem_device), and a second reader beside it. A plain
    // read takes the place of an atomic one: only a plain read conflicts with atomic writes.
    uint32_t rs = s.stamp[DEV_R];
    if (rs && (rs < ctx.tg_start || rs >= dev_sync)) {
      bool upgrade = !atomic && (s.tid[DEV_R] & DEV_ATOMIC);
      if ((s.tid[DEV_R] & ~DEV_ATOMIC) == me->tid) {
        if (!upgrade) return;
        slot = DEV_R;
      } else if (!s.stamp[DEV_R2] || (!atomic && (s.tid[DEV_R2] & DEV_ATOMIC))) {
        slot = DEV_R2;
      } else if (upgrade) {
        slot = DEV_R;
      } else {
        return;
      }
    } else {
      slot = DEV_R;
      s.stamp[DEV_R2] = 0;
    }
  }
  s.stamp[slot] = ctx.clock; s.pc[slot] = pco; s.tid[slot] = t;
}

static inline bool dev_in(const void* p) { return (uintptr_t)p - dev_lo < dev_span; }

// an access of n bytes: recorded at its first byte and every 4 bytes after it, so that a
// vector access meets the scalar accesses of its components
static inline void dev_check(const void* p, unsigned long n, int kind, const void* ra) {
  dev_caller = ra;
  if (!dev_span) return;
  if (dev_pending.set) dev_settle();
  const void* pc = (const char*)ra - 1;  // inside the call, so on the line that made the access
  unsigned long step = n < 4 ? (n ? n : 1) : 4;
  for (unsigned long k = 0; k < n; k += step)
    if (dev_in((const char*)p + k)) dev_access((const char*)p + k, (int)n, kind, pc, (const char*)p);
}

// The instrumentation's interface (LLVM's and GCC's ThreadSanitizer call these names). Only
// a kernel built with device race checking refers to them; an atomic operation is done here,
// as the shim asked for it, and then checked. They are the code of section mslemu_devcheck,
// so that a timeout that stops a thread inside one names the kernel's line (dev_caller's)
// rather than the runtime's.
#define MSLEMU_TSAN_ACCESS(n)                                                                      \
  extern "C" MSLEMU_DEVCHECK void __tsan_read##n(void* p) { dev_check(p, n, DEV_READ, __builtin_return_address(0)); } \
  extern "C" MSLEMU_DEVCHECK void __tsan_write##n(void* p) { dev_check(p, n, DEV_WRITE, __builtin_return_address(0)); } \
  extern "C" MSLEMU_DEVCHECK void __tsan_unaligned_read##n(void* p) { dev_check(p, n, DEV_READ, __builtin_return_address(0)); } \
  extern "C" MSLEMU_DEVCHECK void __tsan_unaligned_write##n(void* p) { dev_check(p, n, DEV_WRITE, __builtin_return_address(0)); } \
  extern "C" MSLEMU_DEVCHECK void __tsan_volatile_read##n(void* p) { dev_check(p, n, DEV_READ, __builtin_return_address(0)); } \
  extern "C" MSLEMU_DEVCHECK void __tsan_volatile_write##n(void* p) { dev_check(p, n, DEV_WRITE, __builtin_return_address(0)); }
MSLEMU_TSAN_ACCESS(1) MSLEMU_TSAN_ACCESS(2) MSLEMU_TSAN_ACCESS(4) MSLEMU_TSAN_ACCESS(8) MSLEMU_TSAN_ACCESS(16)
#undef MSLEMU_TSAN_ACCESS
extern "C" MSLEMU_DEVCHECK void __tsan_read_range(void* p, unsigned long n) { dev_check(p, n, DEV_READ, __builtin_return_address(0)); }
extern "C" MSLEMU_DEVCHECK void __tsan_write_range(void* p, unsigned long n) { dev_check(p, n, DEV_WRITE, __builtin_return_address(0)); }
extern "C" MSLEMU_DEVCHECK void __tsan_init() {}
extern "C" MSLEMU_DEVCHECK void __tsan_func_entry(void*) {}
extern "C" MSLEMU_DEVCHECK void __tsan_func_exit() {}
extern "C" MSLEMU_DEVCHECK void __tsan_vptr_update(void**, void*) {}
extern "C" MSLEMU_DEVCHECK void __tsan_vptr_read(void**) {}
extern "C" MSLEMU_DEVCHECK void __tsan_atomic_thread_fence(int) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
extern "C" MSLEMU_DEVCHECK void __tsan_atomic_signal_fence(int) {}

#define MSLEMU_TSAN_ATOMIC(bits, T)                                                                              \
  extern "C" MSLEMU_DEVCHECK T __tsan_atomic##bits##_load(const volatile T* a, int) {                                              \
    dev_check((const void*)a, sizeof(T), DEV_ATOMIC_READ, __builtin_return_address(0));                             \
    return __atomic_load_n(a, __ATOMIC_SEQ_CST);                                                                  \
  }                                                                                                               \
  extern "C" MSLEMU_DEVCHECK void __tsan_atomic##bits##_store(volatile T* a, T v, int) {                                          \
    dev_check((const void*)a, sizeof(T), DEV_ATOMIC_WRITE, __builtin_return_address(0));                            \
    __atomic_store_n(a, v, __ATOMIC_SEQ_CST);                                                                     \
  }                                                                                                               \
  MSLEMU_TSAN_RMW(bits, T, exchange, __atomic_exchange_n)                                                         \
  MSLEMU_TSAN_RMW(bits, T, fetch_add, __atomic_fetch_add) MSLEMU_TSAN_RMW(bits, T, fetch_sub, __atomic_fetch_sub) \
  MSLEMU_TSAN_RMW(bits, T, fetch_and, __atomic_fetch_and) MSLEMU_TSAN_RMW(bits, T, fetch_or, __atomic_fetch_or)   \
  MSLEMU_TSAN_RMW(bits, T, fetch_xor, __atomic_fetch_xor) MSLEMU_TSAN_RMW(bits, T, fetch_nand, __atomic_fetch_nand) \
  /* a compare-exchange that fails only reads */                                                                  \
  extern "C" MSLEMU_DEVCHECK int __tsan_atomic##bits##_compare_exchange_strong(volatile T* a, T* c, T v, int, int) {              \
    bool ok = __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);                     \
    dev_check((const void*)a, sizeof(T), ok ? DEV_ATOMIC_WRITE : DEV_ATOMIC_READ, __builtin_return_address(0));     \
    return ok;                                                                                                    \
  }                                                                                                               \
  extern "C" MSLEMU_DEVCHECK int __tsan_atomic##bits##_compare_exchange_weak(volatile T* a, T* c, T v, int, int) {                \
    bool ok = __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);                     \
    dev_check((const void*)a, sizeof(T), ok ? DEV_ATOMIC_WRITE : DEV_ATOMIC_READ, __builtin_return_address(0));     \
    return ok;                                                                                                    \
  }                                                                                                               \
  extern "C" MSLEMU_DEVCHECK T __tsan_atomic##bits##_compare_exchange_val(volatile T* a, T c, T v, int, int) {                    \
    bool ok = __atomic_compare_exchange_n(a, &c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);                    \
    dev_check((const void*)a, sizeof(T), ok ? DEV_ATOMIC_WRITE : DEV_ATOMIC_READ, __builtin_return_address(0));     \
    return c;                                                                                                     \
  }
#define MSLEMU_TSAN_RMW(bits, T, name, builtin)                                                                   \
  extern "C" MSLEMU_DEVCHECK T __tsan_atomic##bits##_##name(volatile T* a, T v, int) {                                            \
    dev_check((const void*)a, sizeof(T), DEV_ATOMIC_WRITE, __builtin_return_address(0));                            \
    return builtin(a, v, __ATOMIC_SEQ_CST);                                                                       \
  }
MSLEMU_TSAN_ATOMIC(8, char) MSLEMU_TSAN_ATOMIC(16, short) MSLEMU_TSAN_ATOMIC(32, int) MSLEMU_TSAN_ATOMIC(64, long)
#undef MSLEMU_TSAN_RMW
#undef MSLEMU_TSAN_ATOMIC
#undef MSLEMU_DEVCHECK
// where the linker put that section (ELF linkers define these; elsewhere they stay null)
extern "C" char __start_mslemu_devcheck[] __attribute__((weak));
extern "C" char __stop_mslemu_devcheck[] __attribute__((weak));
static bool in_device_check(uintptr_t pc) {
  return dev_caller && __start_mslemu_devcheck && pc >= (uintptr_t)__start_mslemu_devcheck &&
         pc < (uintptr_t)__stop_mslemu_devcheck;
}

// ------------------------------------------------------------------ scheduler
static void fiber_main() {
  if (tracing) trace_event(TR_START, ctx.cur, 0, 0, nullptr, 0);
  launch->entry();
  dev_settle();
  flush_pending_oob();
  if (ctx.cur->nq) mma_flush("(thread exit)", 0);
  Fiber* f = ctx.cur;
  if (tracing) trace_event(TR_END, f, 0, 0, nullptr, 0);
  f->state = F_DONE;
  if (barrier_arrivals) returned_while_waited[f->tid] = 1;
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
  // a simdgroup whose live lanes are split between a simd-group op and something else
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
                            tg_str().c_str(), sg, what.c_str()) + describe_waiting(sg),
             Facts().where(nullptr).add("simdgroup", fmt("%u", sg)).add("sites", site(fs->wfile, fs->wline))
                 .add("operation", op_name(fs->wop)));
    }
  }
  std::string sites;
  for (uint32_t i = 0; i < tg_threads; ++i)
    if (fibers[i].state == F_BARRIER && sites.find(site(fibers[i].wfile, fibers[i].wline)) == std::string::npos)
      sites += (sites.empty() ? "" : ";") + site(fibers[i].wfile, fibers[i].wline);
  finish(E_BARRIER, "deadlock in " + tg_str() + ": a threadgroup_barrier is never reached by all live threads:" +
                        describe_waiting(-1), Facts().where(nullptr).add("sites", sites));
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

// fresh threadgroup memory (every byte MSLEMU_TG_FILL_BYTE, as undefined as the emulator
// can make it visible; a new generation for the race shadow) and the [[threadgroup(n)]]
// buffers of the launch
static void reset_threadgroup_memory() {
  ++ctx.tg_gen;
  ctx.arena_used = 0;
  tg_region_count = 0;
  for (int i = 0; i < MSLEMU_MAX_BUFFERS; ++i) {
    ctx.tgm[i] = launch->tgm_size[i] ? tg_alloc(launch->tgm_size[i], 16, "threadgroup buffer") : nullptr;
    ctx.tgm_size[i] = launch->tgm_size[i];
  }
  memset(ctx.arena, MSLEMU_TG_FILL_BYTE, TG_MEMORY_BYTES);
  ctx.tg_sync = ++ctx.clock;
  ctx.exec_sync = ctx.tg_sync;
  ctx.tg_start = ctx.clock;
  for (int i = 0; i < 32; ++i) ctx.sg_sync[i] = sg_dev_sync[i] = ctx.clock;
  dev_sync = ctx.clock;
  if (dev_span) dev_threadgroup_started();
}

// every thread of the threadgroup as a fiber that has not run yet
static void init_fibers() {
  live_threads = tg_threads; barrier_arrivals = 0; lockstep_cursor = 0;
  memset(returned_while_waited, 0, tg_threads);
  pending_race = PendingRace();
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
      if (release_divergent_barrier()) continue;
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
  uint64_t linear_tg = ((uint64_t)tz * launch->ntg[1] + ty) * launch->ntg[0] + tx;
  seed_schedule(linear_tg);
  tracing = trace_selects(linear_tg);
  trace_seq = 0;
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

static struct timespec run_start;  // when this process started on the kernel

static double seconds_since(const struct timespec& t0) {
  struct timespec t1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
}

[[noreturn]] static void report_timeout(uintptr_t pc) {
  flush_pending_oob();
  std::string m = fmt("timeout: the kernel did not finish within %g s (infinite loop or a very large launch?)",
                      launch->timeout);
  Facts f;
  f.where(ctx.cur);
  const Fiber* cur = ctx.cur;
  if (cur && (cur->state == F_BARRIER || cur->state == F_SIMD)) {  // in the runtime, at a rendezvous
    std::string at = site(cur->wfile, cur->wline);
    m += "; " + th_str(cur) + " of " + tg_str() + " was at " +
         (cur->state == F_BARRIER ? std::string("threadgroup_barrier") : op_name(cur->wop)) + " at " + at;
    f.add("site", at);
  } else if (cur) {
    m += "; " + th_str(cur) + " of " + tg_str() + " was running at " + pcs((void*)pc);
    f.pc("site_pc", (void*)pc);
  }
  if (fibers && tg_threads) m += "; threads:" + describe_waiting(-1);
  result->sig = SIGALRM;
  finish(E_TIMEOUT, m, f);
}

// A fault just below a fiber's stack (in its guard page, or under the lowest stack) is an overflow.
static bool is_stack_overflow(int sig, const char* a) {
  return sig == SIGSEGV && fiber_stacks && a >= fiber_stacks - (1 << 20) &&
         a < fiber_stacks + fiber_stack_count * (FIBER_STACK_BYTES + STACK_GUARD_BYTES) &&
         (a < fiber_stacks || ((size_t)(a - fiber_stacks) % (FIBER_STACK_BYTES + STACK_GUARD_BYTES)) < STACK_GUARD_BYTES);
}

// the trap instruction the compiler puts in a failed bounds check: ud2 on x86-64, brk on arm64
static bool is_bounds_trap(int sig, uintptr_t pc) {
#if defined(__x86_64__)
  const unsigned char* p = (const unsigned char*)pc;
  return sig == SIGILL && p[0] == 0x0f && p[1] == 0x0b;
#elif defined(__aarch64__)
  uint32_t insn;
  memcpy(&insn, (const void*)pc, 4);
  return (sig == SIGTRAP || sig == SIGILL) && (insn & 0xffe0001fu) == 0xd4200000u;
#else
  (void)sig; (void)pc;
  return false;
#endif
}

[[noreturn]] static void report_crash(int sig, const siginfo_t* si, uintptr_t pc) {
  // a write to the read-only zeros an out-of-bounds check handed out
  if ((sig == SIGSEGV || sig == SIGBUS) && in_oob_zone(si->si_addr) && last_oob.valid) report_oob("write to");
  flush_pending_oob();
  const char* name = sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : sig == SIGFPE ? "SIGFPE"
                   : sig == SIGILL ? "SIGILL" : sig == SIGABRT ? "SIGABRT" : sig == SIGTRAP ? "SIGTRAP" : "signal";
  std::string m = fmt("kernel crashed with %s", name);
  if (sig == SIGFPE && si->si_code == FPE_INTDIV)  // build.py: a compile-time zero divides where it is written
    m = "integer division by zero (the CPU traps, SIGFPE; on a GPU the result is undefined)";
  int unbound = (sig == SIGSEGV || sig == SIGBUS) ? unbound_index(si->si_addr) : -1;
  if (unbound >= 0 && launch->buf_name[unbound]) {
    // a reference parameter whose buffer the launch left unbound (mslemu_bind.h)
    m = fmt("kernel read parameter '%s' [[buffer(%d)]]", launch->buf_name[unbound], unbound);
    if (pc) m += " at " + pcs((void*)pc);
    m += ", but the launch left that buffer unbound (bind it, or keep the kernel from reading it)";
    if (ctx.cur) m += " in " + tg_str() + ", " + th_str(ctx.cur);
    Facts uf;
    uf.where(ctx.cur).add("buffer", launch->buf_name[unbound]).add("access", "read").add("unbound", "1");
    if (pc) uf.pc("site_pc", (void*)pc);
    finish(E_OOB, m, uf);
  }
  if (pc && !mslemu::user_trap && is_bounds_trap(sig, pc)) {
    // build.py KERNEL_CHECK_FLAGS: the compiler's check of an index into a fixed-size array
    m = "out-of-bounds index into an array of fixed size (a thread's own array, or an array member of a struct)";
    m += " at " + pcs((void*)pc);
    if (ctx.cur) m += " in " + tg_str() + ", " + th_str(ctx.cur);
    m += ": on a GPU that is undefined behaviour";
    Facts bf;
    bf.where(ctx.cur).pc("site_pc", (void*)pc).add("kind", "fixed-size-array").add("access", "unknown");
    finish(E_OOB, m, bf);
  }
  if (is_stack_overflow(sig, (const char*)si->si_addr))
    m += fmt(" (stack overflow of a GPU thread: its %zu KiB stack is full; a thread-local array that large "
             "would not fit in a GPU thread's registers or stack either)", FIBER_STACK_BYTES / 1024);
  else if (sig == SIGSEGV || sig == SIGBUS)
    m += fmt(" (invalid address %p)", si->si_addr);
  Facts f;
  f.where(ctx.cur).add("signal", name);
  if (pc) { m += " at " + pcs((void*)pc); f.pc("site_pc", (void*)pc); }
  if (ctx.cur) m += " in " + tg_str() + ", " + th_str(ctx.cur);
  result->sig = sig;
  finish(E_CRASH, m, f);
}

// Integer division by zero (and INT_MIN / -1) traps on x86-64, where Metal gives an undefined
// value and goes on (llama.cpp's soft_max computes `i03 % args.ne13` with ne13 == 0 and
// never uses the result): in kernel code the division instruction is skipped with 0 as its
// quotient and remainder, which is what arm64's division instructions give, and a
// PortabilityWarning names the line. The length of the div/idiv instruction at p, 0 if it
// is not one; *byte: the 8-bit form (quotient in AL, remainder in AH), *word: the 16-bit one.
static int x86_division_length(const unsigned char* p, bool* byte, bool* word) {
  int n = 0;
  *word = false;
  while (p[n] == 0x66 || p[n] == 0x67 || p[n] == 0xf2 || p[n] == 0xf3 || p[n] == 0x2e || p[n] == 0x3e ||
         p[n] == 0x26 || p[n] == 0x36 || p[n] == 0x64 || p[n] == 0x65) {
    if (p[n] == 0x66) *word = true;
    ++n;
  }
  bool rex_w = false;
  if ((p[n] & 0xf0) == 0x40) rex_w = p[n++] & 0x08;
  if (rex_w) *word = false;
  unsigned op = p[n++];
  if (op != 0xf6 && op != 0xf7) return 0;
  unsigned modrm = p[n++], reg = (modrm >> 3) & 7, mod = modrm >> 6, rm = modrm & 7;
  if (reg != 6 && reg != 7) return 0;  // /6 div, /7 idiv
  if (mod != 3 && rm == 4 && (p[n++] & 7) == 5 && mod == 0) n += 4;  // SIB with a 32-bit displacement
  else if (mod == 0 && rm == 5) n += 4;  // RIP-relative
  if (mod == 1) n += 1;
  else if (mod == 2) n += 4;
  *byte = op == 0xf6;
  return n;
}

static bool resume_after_division(int sig, siginfo_t* si, void* uc_) {
#if defined(__x86_64__) && defined(__linux__)
  if (sig != SIGFPE || si->si_code != FPE_INTDIV || !ctx.cur || in_device_check(signal_pc(uc_))) return false;
  ucontext_t* uc = (ucontext_t*)uc_;
  uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
  bool byte, word;
  int len = x86_division_length((const unsigned char*)pc, &byte, &word);
  if (!len) return false;
  greg_t& rax = uc->uc_mcontext.gregs[REG_RAX];
  greg_t& rdx = uc->uc_mcontext.gregs[REG_RDX];
  if (byte) rax &= ~(greg_t)0xffff;
  else if (word) { rax &= ~(greg_t)0xffff; rdx &= ~(greg_t)0xffff; }
  else { rax = 0; rdx = 0; }
  uc->uc_mcontext.gregs[REG_RIP] = (greg_t)(pc + len);
  add_warning((const char*)pc, 0,
              th_str(ctx.cur) + " divides an integer by zero (or the most negative value by -1) at " +
                  pcs((void*)pc) + " in " + tg_str() +
                  ": the Metal specification leaves the result undefined; the emulator gives 0 for the quotient "
                  "and the remainder and goes on (not portable: a result that is used is a bug)",
              Facts().add("kind", "integer-division-by-zero").where(ctx.cur).pc("site_pc", (void*)pc));
  return true;
#else
  (void)sig; (void)si; (void)uc_;
  return false;
#endif
}

static void on_fault(int sig, siginfo_t* si, void* uc) {
  if (resume_after_division(sig, si, uc)) return;
  report_crash(sig, si, signal_pc(uc));
}

// Every TICK seconds: is the caller still there (a worker must not outlive it: on Linux
// PR_SET_PDEATHSIG does that too, this is the portable way), and is the time up?
static const double TICK = 0.1;
static void on_tick(int, siginfo_t*, void* uc) {
  if (in_worker && getppid() != (pid_t)launch->parent_pid) _exit(E_GENERIC);
  if (launch->timeout > 0 && seconds_since(run_start) >= launch->timeout)
    report_timeout(in_device_check(signal_pc(uc)) ? (uintptr_t)dev_caller - 1 : signal_pc(uc));
}

static void install_handlers() {
  static char altstack[65536];
  stack_t ss{};
  ss.ss_sp = altstack; ss.ss_size = sizeof altstack;
  sigaltstack(&ss, nullptr);
  struct sigaction sa{};
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  for (int s : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP}) sigaction(s, &sa, nullptr);
  sa.sa_sigaction = on_tick;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
  sigaction(SIGALRM, &sa, nullptr);
  if (in_worker) {  // Ctrl-C ends the worker processes (the caller then sees KeyboardInterrupt)
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
  }
  clock_gettime(CLOCK_MONOTONIC, &run_start);
  if (in_worker || launch->timeout > 0) {
    double period = launch->timeout > 0 && launch->timeout < TICK ? launch->timeout : TICK;
    struct itimerval it{};
    it.it_value.tv_sec = it.it_interval.tv_sec = (long)period;
    it.it_value.tv_usec = it.it_interval.tv_usec = (long)((period - (long)period) * 1e6);
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
// with the read-only zone after it and the race shadow of both, for the largest
// threadgroup of the launch
static void allocate_threadgroup_state() {
  uint32_t maxn = launch->tptg[0] * launch->tptg[1] * launch->tptg[2];
  fiber_stack_count = maxn;
  fiber_stacks = (char*)mmap(nullptr, maxn * (FIBER_STACK_BYTES + STACK_GUARD_BYTES), PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (fiber_stacks == MAP_FAILED) finish(E_GENERIC, "cannot allocate fiber stacks");
  for (uint32_t i = 0; i < maxn; ++i)
    mprotect(fiber_stacks + (size_t)i * (FIBER_STACK_BYTES + STACK_GUARD_BYTES), STACK_GUARD_BYTES, PROT_NONE);
  fibers = (Fiber*)zalloc(maxn * sizeof(Fiber));
  returned_while_waited = (uint8_t*)zalloc(maxn);
  ctx.mmaq = (LaneOp*)zalloc((size_t)((maxn + 31) / 32) * MMA_QCAP * 32 * sizeof(LaneOp));
#ifdef MSLEMU_UCONTEXT
  uctx.resize(maxn);
#endif
  ctx.arena = (char*)zalloc(2 * TG_MEMORY_BYTES);
  ctx.arena_size = TG_MEMORY_BYTES;
  mprotect(oob_zone(), TG_MEMORY_BYTES, PROT_READ);
  ctx.shadow = zalloc((2 * TG_MEMORY_BYTES + 8) * sizeof(Shadow));  // one per byte (mslemu.h)
}

// what kernel code reads of the launch: buffers, grid, checking modes
static void bind_launch() {
  user_trap = 0;
  ctx.race_check = launch->race_check;
  ctx.pc_base = so_base;
  ctx.oob_lenient = launch->oob_reads;
  ctx.clock = 1;
  dev_lo = dev_span = 0;  // allocate_device_shadow sets them when the launch asks for the device race check
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
  trace_buf = launch->trace_offset ? (TraceHeader*)((char*)(uintptr_t)launch->region_base + launch->trace_offset) : nullptr;
  install_handlers();
  allocate_threadgroup_state();
  bind_launch();
  if (launch->device_races) allocate_device_shadow();
  int64_t lin = 0;
  for (uint32_t z = 0; z < launch->ntg[2]; ++z)
    for (uint32_t y = 0; y < launch->ntg[1]; ++y)
      for (uint32_t x = 0; x < launch->ntg[0]; ++x, ++lin) {
        if (lin % worker_count != worker_index) continue;
        result->err_tg = lin;
        run_threadgroup(x, y, z);
      }
  result->err_tg = INT64_MAX;
  result->status = 0;
  return 0;
}

// ------------------------------------------------------------------ entry points
static void find_so_base() {
  Dl_info di;
  if (dladdr((void*)&find_so_base, &di)) so_base = (uintptr_t)di.dli_fbase;
}

// A worker process: run worker `index`'s threadgroups, report in results[index], exit.
[[noreturn]] static void worker_process(MslemuLaunch* l, int index) {
  in_worker = true;
  coverage_reset();
#if defined(__linux__)
  // die with the caller (the signal comes when the thread that forked ends: kernel.py forks
  // from the thread that waits for the workers)
  if (!getenv("GEMMGLOSSARY_EMULATOR_NO_PDEATHSIG")) prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
  if (getppid() != (pid_t)l->parent_pid) _exit(E_GENERIC);  // it ended before we could tell
  launch = l;
  worker_index = index;
  worker_count = l->workers;
  result = l->results[index];
  result->err_tg = -1;
  run_all();
  coverage_dump();
  _exit(0);
}

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

// Fork l->workers worker processes (Linux; see kernel.py for macOS); their pids go to
// `pids`. Returns how many were started, or -1 (none left running) if a fork failed.
extern "C" __attribute__((visibility("default"))) int mslemu_fork_workers(MslemuLaunch* l, int32_t* pids) {
  find_so_base();
  fflush(stdout); fflush(stderr);
  for (int i = 0; i < l->workers; ++i) {
    pid_t pid = raw_fork();
    if (pid < 0) {
      for (int k = 0; k < i; ++k) { kill(pids[k], SIGKILL); waitpid(pids[k], nullptr, 0); }
      return -1;
    }
    if (pid == 0) worker_process(l, i);
    pids[i] = (int32_t)pid;
  }
  return l->workers;
}

// A spawned worker (emulator/cpp/worker_main.cpp calls this after loading the kernel):
// map the caller's shared region from descriptor `fd`, copy the launch from it with its
// pointers moved by the mapping's offset from the caller's, and run worker `index`.
extern "C" __attribute__((visibility("default"))) int mslemu_worker(int fd, uint64_t size, int index, MslemuEntry entry) {
  find_so_base();
  char* base = (char*)mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) return E_GENERIC;
  close(fd);
  // a private copy: the other workers map the same struct, each at its own address
  static MslemuLaunch own;
  own = *(const MslemuLaunch*)base;
  MslemuLaunch* l = &own;
  intptr_t delta = (intptr_t)base - (intptr_t)l->region_base;
  auto move = [&](auto* p) { return p ? (decltype(p))((char*)p + delta) : p; };
  for (int i = 0; i < MSLEMU_MAX_BUFFERS; ++i) { l->buf[i] = move((char*)l->buf[i]); l->buf_name[i] = move(l->buf_name[i]); }
  for (int i = 0; i < MSLEMU_MAX_WORKERS; ++i) l->results[i] = move(l->results[i]);
  l->region_base = (uint64_t)(uintptr_t)base;
  l->entry = entry;
  worker_process(l, index);
}

// for the trace's reader: the load address strings are offsets from, and the names of op codes
extern "C" __attribute__((visibility("default"))) uint64_t mslemu_so_base() { find_so_base(); return so_base; }
extern "C" __attribute__((visibility("default"))) const char* mslemu_op_name(int op) { return op_name(op); }

// The whole launch in the calling process (GEMMGLOSSARY_EMULATOR_INPROCESS=1, for debugging
// the emulator under gdb): any diagnostic or crash ends the process.
extern "C" __attribute__((visibility("default"))) int mslemu_run(MslemuLaunch* l) {
  find_so_base();
  launch = l;
  result = l->results[0];
  result->err_tg = -1;
  worker_index = 0;
  worker_count = 1;
  return run_all();
}
