// The interface between the emulator's C++ side (runtime, generated entry points) and
// Python (kernel.py), written down once (original code).
//
// Python does not keep a copy: gemmglossary/emulator/abi.py reads this file (its enums, and
// the field lists of the MSLEMU_*_FIELDS macros) and builds its ctypes structures from it;
// at load it compares their layout with what the compiler made of them, which the runtime
// exports (mslemu_abi_layout), and refuses to run on any difference.
//
// abi.py reads a small subset of C++, so keep to it: `enum Name { A = 1, B, ... };` with
// integer values or none (the previous one plus one), and struct fields as one
// FIELD(type, name) or ARRAY(type, name, count) per line; the types it knows are listed in
// abi.py (CTYPES). Comments are /* */ inside the macros (a // comment would swallow the
// line continuation).
#pragma once
#include <stdint.h>

namespace mslemu {
inline namespace abi {

enum Limits {
  MSLEMU_MAX_BUFFERS = 32,     // [[buffer(n)]] and [[threadgroup(n)]] indices are below this
  MSLEMU_MSG_BYTES = 16384,    // room for a diagnostic
  MSLEMU_NOTE_BYTES = 2048,    // room for a warning
  MSLEMU_OOB_NOTE_BYTES = 4096,
  MSLEMU_MAX_PARAMS = 64,      // parameters of one kernel
  MSLEMU_MAX_WORKERS = 16,     // worker processes of one launch
  MSLEMU_SYMBOL_BYTES = 64     // room for the name of a kernel's entry point
};

// The byte every threadgroup's threadgroup memory starts as. A GPU gives it no defined
// contents; 0xFF reads as NaN in float, half and bfloat (all exponent bits set, a nonzero
// mantissa) and as -1 (signed) or the largest value (unsigned) at every integer width, so a
// kernel that reads it before writing it gives visibly wrong numbers, not the zeros a
// fresh allocation happens to hold. It is the only byte that is NaN at every float width.
enum Fill { MSLEMU_TG_FILL_BYTE = 0xFF };

// MslemuResult.status; the worker processes also exit with it
enum ErrKind {
  E_OK = 0,
  E_GENERIC = 10,   // EmulatorError
  E_OOB = 11,       // OutOfBoundsError
  E_RACE = 12,      // DataRaceError
  E_BARRIER = 13,   // BarrierError
  E_DIVERGE = 14,   // SimdgroupDivergenceError
  E_TIMEOUT = 15,   // KernelTimeoutError
  E_CRASH = 16,     // KernelCrash
  E_LAUNCH = 17     // LaunchError
};

// ParamInfo.kind and the generated ParamDesc: what a kernel parameter binds to
enum ParamKind {
  P_NONE = 0,
  P_BUFFER = 1,   // [[buffer(n)]]
  P_TGMEM = 2,    // [[threadgroup(n)]]
  P_TPIG = 10,    // [[thread_position_in_grid]]
  P_TPITG,        // [[thread_position_in_threadgroup]]
  P_TGPIG,        // [[threadgroup_position_in_grid]]
  P_TPTG,         // [[threads_per_threadgroup]]
  P_TGPG,         // [[threadgroups_per_grid]]
  P_TPG,          // [[threads_per_grid]]
  P_TIITG,        // [[thread_index_in_threadgroup]]
  P_LANE,         // [[thread_index_in_simdgroup]]
  P_SGITG,        // [[simdgroup_index_in_threadgroup]]
  P_SGPTG,        // [[simdgroups_per_threadgroup]]
  P_WIDTH,        // [[thread_execution_width]], [[threads_per_simdgroup]]
  P_ORIGIN,       // [[grid_origin]]
  P_QLANE,        // [[thread_index_in_quadgroup]]
  P_QGITG,        // [[quadgroup_index_in_threadgroup]]
  P_QGPTG         // [[quadgroups_per_threadgroup]]
};

// ParamInfo.elem_kind: what one element (or, for vectors and atomics, one component) is
enum ElemKind {
  EK_UNKNOWN = 0,
  EK_SINT = 1,     // char, short, int, long
  EK_UINT = 2,     // uchar, ushort, uint, ulong
  EK_FLOAT = 3,    // half, float, double (IEEE)
  EK_BOOL = 4,
  EK_BFLOAT = 5,   // bfloat (numpy has none: see kernel.py's dtype rules)
  EK_VOID = 6,     // device void*: raw memory
  EK_STRUCT = 7    // a struct or class: its bytes, elem_size of them
};

// the address spaces the shim's checked pointers carry (mslemu::ptr<AS, T>)
enum AddressSpace { AS_THREAD = 0, AS_DEVICE = 1, AS_CONSTANT = 2, AS_THREADGROUP = 3 };

// MslemuLaunch.schedule
enum Schedule { SCHED_LOCKSTEP = 0, SCHED_SIMDGROUP_MAJOR = 1, SCHED_RANDOM = 2 };

// op codes of the simd-group collectives (Fiber::wop while a lane waits at one); in a
// namespace of their own so that the shim's metal namespace can see them and nothing else
namespace ops {
enum Op {
  OP_SUM = 1, OP_PRODUCT, OP_MAX, OP_MIN, OP_SHUFFLE, OP_SHUFFLE_XOR, OP_SHUFFLE_UP, OP_SHUFFLE_DOWN,
  OP_BROADCAST, OP_BROADCAST_FIRST, OP_PREFIX_EXCL_SUM, OP_PREFIX_INCL_SUM, OP_ALL, OP_ANY,
  OP_MMA,                // a flush of the queued simdgroup matrix multiplies
  OP_AND, OP_OR, OP_XOR, OP_ROTATE_DOWN, OP_ROTATE_UP, OP_IS_FIRST, OP_PREFIX_EXCL_PRODUCT,
  OP_PREFIX_INCL_PRODUCT, OP_BALLOT, OP_ACTIVE_MASK, OP_FILL_UP, OP_FILL_DOWN,
  OP_TENSOR_MATMUL2D = 40,  // Metal 4 tensor ops: matmul2d::run
  OP_QUAD = 64,          // added to an op code: the quad-group function of that name
  OP_SIMD_BARRIER = 100  // simdgroup_barrier: a rendezvous with nothing to compute
};
}  // namespace ops
using namespace ops;

typedef void (*MslemuEntry)(void);

// What a launch reports: one per worker process, in memory shared with it. Each message is
// the text, then (after MSLEMU_FACTS_SEPARATOR) its facts, one `key=value` per line, which
// kernel.py turns into attributes of the exception or warning.
#define MSLEMU_FACTS_SEPARATOR '\x1f'
#define MSLEMU_RECORD_SEPARATOR '\x1e'  // between the warnings of warn_msg
#define MSLEMU_RESULT_FIELDS(FIELD, ARRAY)                                                        \
  FIELD(int32_t, status)        /* an ErrKind; -1 until the worker ends */                        \
  FIELD(int32_t, warn)          /* 1: warn_msg holds a PortabilityWarning */                      \
  FIELD(int32_t, sig)           /* the signal of a crash or timeout */                            \
  FIELD(int32_t, pad)                                                                            \
  ARRAY(char, msg, MSLEMU_MSG_BYTES)                                                              \
  ARRAY(char, warn_msg, MSLEMU_NOTE_BYTES)                                                        \
  ARRAY(char, oob_msg, MSLEMU_OOB_NOTE_BYTES) /* the first out-of-bounds read oob_reads allowed */  \
  FIELD(int64_t, err_tg)        /* linear index of the failing threadgroup (-1: outside one) */   \
  ARRAY(char, uninit_msg, MSLEMU_NOTE_BYTES)  /* the first read of unwritten threadgroup memory */

// What kernel.py asks for. It lives at the start of a shared region (this struct, the
// results, the buffer names, the buffers) that the worker processes map: a spawned worker
// maps it elsewhere and moves every pointer by the difference from region_base.
#define MSLEMU_LAUNCH_FIELDS(FIELD, ARRAY)                                                        \
  ARRAY(uint32_t, ntg, 3)       /* threadgroups per grid */                                       \
  ARRAY(uint32_t, grid, 3)      /* threads per grid */                                            \
  ARRAY(uint32_t, tptg, 3)      /* threads per threadgroup */                                     \
  FIELD(int32_t, dispatch_threads) /* 1: dispatchThreads (edge threadgroups are cut at the grid) */ \
  FIELD(int32_t, schedule)      /* a Schedule */                                                  \
  FIELD(uint64_t, seed)         /* of SCHED_RANDOM */                                             \
  FIELD(double, timeout)        /* seconds; 0: none */                                            \
  FIELD(int32_t, race_check)                                                                     \
  FIELD(int32_t, device_races)  /* 1: check device memory for races (an instrumented kernel) */    \
  FIELD(int32_t, oob_reads)     /* 1: out-of-bounds reads return 0 with a warning */              \
  FIELD(int32_t, workers)       /* worker processes, 1 to MSLEMU_MAX_WORKERS */                  \
  FIELD(int32_t, parent_pid)    /* the caller: workers stop when it is gone */                    \
  ARRAY(void*, buf, MSLEMU_MAX_BUFFERS)                                                           \
  ARRAY(uint64_t, buf_size, MSLEMU_MAX_BUFFERS)                                                   \
  ARRAY(const char*, buf_name, MSLEMU_MAX_BUFFERS)                                                \
  ARRAY(uint64_t, tgm_size, MSLEMU_MAX_BUFFERS) /* bytes of each [[threadgroup(n)]] buffer */     \
  FIELD(MslemuEntry, entry)     /* the kernel's generated entry point, in the caller */           \
  ARRAY(char, entry_symbol, MSLEMU_SYMBOL_BYTES) /* its name, for a spawned worker */             \
  ARRAY(MslemuResult*, results, MSLEMU_MAX_WORKERS) /* results[i]: worker i's */                  \
  FIELD(uint64_t, region_base)  /* the caller's address of the shared region */                   \
  FIELD(uint64_t, region_size)                                                                   \
  FIELD(uint64_t, trace_offset) /* where a TraceHeader is in the region; 0: no trace */

// What the generated __mslemu_info_<id>() says of each parameter.
#define MSLEMU_PARAM_INFO_FIELDS(FIELD, ARRAY)                                                    \
  FIELD(int32_t, kind)          /* a ParamKind */                                                 \
  FIELD(int32_t, index)         /* n of [[buffer(n)]] / [[threadgroup(n)]] */                     \
  FIELD(int32_t, gate)          /* 0: switched off by a function constant */                      \
  FIELD(int32_t, elem_size)     /* bytes of one element (0 for void) */                           \
  FIELD(int32_t, elem_kind)     /* an ElemKind, of the element or of its components */            \
  FIELD(int32_t, is_ref)        /* a reference (constant T&) */                                   \
  FIELD(int32_t, is_ptr)        /* a pointer (device T*) */                                       \
  FIELD(int32_t, address_space) /* an AddressSpace (of a pointer) */                              \
  FIELD(int32_t, lanes)         /* components of a vector or packed vector; 1 otherwise */        \
  FIELD(int32_t, lane_size)     /* bytes of one component */                                      \
  FIELD(int32_t, is_atomic)     /* an atomic<T>: elem_kind and lane_size are T's */

#define MSLEMU_DECLARE_FIELD(type, name) type name;
#define MSLEMU_DECLARE_ARRAY(type, name, n) type name[n];
struct MslemuResult { MSLEMU_RESULT_FIELDS(MSLEMU_DECLARE_FIELD, MSLEMU_DECLARE_ARRAY) };
struct MslemuLaunch { MSLEMU_LAUNCH_FIELDS(MSLEMU_DECLARE_FIELD, MSLEMU_DECLARE_ARRAY) };
struct ParamInfo { MSLEMU_PARAM_INFO_FIELDS(MSLEMU_DECLARE_FIELD, MSLEMU_DECLARE_ARRAY) };
#undef MSLEMU_DECLARE_FIELD
#undef MSLEMU_DECLARE_ARRAY

// The opt-in trace (kernel(..., trace=...), read by emulator/trace.py): what each thread of
// the selected threadgroups did at its synchronization points, appended by the workers to
// one buffer in the shared region. Strings (file names, array names) are given as offsets
// from the kernel's shared object, as pcs are, so that a spawned worker's mean the same.
enum TraceKind { TR_START = 1, TR_END, TR_BARRIER_ARRIVE, TR_BARRIER_RELEASE, TR_BARRIER_DEPART,
                 TR_SIMD_ARRIVE, TR_SIMD_DEPART };

#define MSLEMU_TRACE_HEADER_FIELDS(FIELD, ARRAY)                                                  \
  FIELD(uint64_t, event_capacity) /* TraceEvents that fit at events_offset */                     \
  FIELD(uint64_t, event_count)  /* appended (atomically); past event_capacity: dropped */         \
  FIELD(uint64_t, blob_capacity)  /* bytes for snapshots at blob_offset */                         \
  FIELD(uint64_t, blob_used)    /* claimed (atomically); a snapshot that did not fit: dropped */  \
  FIELD(uint64_t, events_offset)  /* from the header */                                           \
  FIELD(uint64_t, blob_offset)                                                                   \
  FIELD(uint64_t, select_offset)  /* a bitmap of the traced threadgroups (linear index) */        \
  FIELD(uint32_t, snapshots)    /* 1: snapshot threadgroup memory at every barrier release */     \
  FIELD(uint32_t, select_bits)  /* bits in the bitmap; 0: every threadgroup is traced */

#define MSLEMU_TRACE_EVENT_FIELDS(FIELD, ARRAY)                                                   \
  FIELD(uint32_t, tg)           /* linear threadgroup index ((z * ny + y) * nx + x) */            \
  FIELD(uint32_t, seq)          /* its place in the order of the threadgroup's events */          \
  FIELD(uint16_t, tid)          /* thread_index_in_threadgroup */                                 \
  FIELD(uint8_t, kind)          /* a TraceKind */                                                 \
  FIELD(uint8_t, flags)         /* barriers: their mem_flags */                                   \
  FIELD(int32_t, op)            /* simd-group events: the op code */                              \
  FIELD(int32_t, line)          /* source line */                                                 \
  FIELD(uint32_t, blob)         /* a release with a snapshot: its offset in the blob area + 1 */  \
  FIELD(uint64_t, file)         /* source file, an offset from the kernel's shared object */

// A snapshot: this head, `regions` TraceRegions, `bytes` bytes of threadgroup memory (padded
// to 8), then one uint16_t per 2 bytes of it: the last writer's thread index, | 0x8000 if it
// wrote since the previous threadgroup_barrier(mem_threadgroup); 0xffff if no thread wrote it.
#define MSLEMU_TRACE_SNAPSHOT_FIELDS(FIELD, ARRAY)                                                \
  FIELD(uint32_t, bytes)                                                                         \
  FIELD(uint32_t, regions)

#define MSLEMU_TRACE_REGION_FIELDS(FIELD, ARRAY)                                                  \
  FIELD(uint64_t, name)         /* an offset from the kernel's shared object */                   \
  FIELD(uint32_t, offset)       /* in threadgroup memory */                                       \
  FIELD(uint32_t, size)                                                                          \
  FIELD(uint32_t, esize)        /* bytes of an element (0: unknown) */                            \
  FIELD(uint32_t, nd)           /* dimensions of the declared array (0: unknown) */               \
  ARRAY(uint32_t, dims, 4)

#define MSLEMU_DECLARE_FIELD(type, name) type name;
#define MSLEMU_DECLARE_ARRAY(type, name, n) type name[n];
struct TraceHeader { MSLEMU_TRACE_HEADER_FIELDS(MSLEMU_DECLARE_FIELD, MSLEMU_DECLARE_ARRAY) };
struct TraceEvent { MSLEMU_TRACE_EVENT_FIELDS(MSLEMU_DECLARE_FIELD, MSLEMU_DECLARE_ARRAY) };
struct TraceSnapshotHead { MSLEMU_TRACE_SNAPSHOT_FIELDS(MSLEMU_DECLARE_FIELD, MSLEMU_DECLARE_ARRAY) };
struct TraceRegion { MSLEMU_TRACE_REGION_FIELDS(MSLEMU_DECLARE_FIELD, MSLEMU_DECLARE_ARRAY) };
#undef MSLEMU_DECLARE_FIELD
#undef MSLEMU_DECLARE_ARRAY

// One row of mslemu_abi_layout(): where the compiler put a field (name empty: the size of
// the whole struct).
struct AbiField { const char* type; const char* name; uint64_t offset, size; };

}  // namespace abi
}  // namespace mslemu
