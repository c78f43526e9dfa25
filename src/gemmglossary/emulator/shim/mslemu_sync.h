// Barriers and fences (original code).
#pragma once

namespace metal {
enum class mem_flags : unsigned { mem_none = 0, mem_device = 1, mem_threadgroup = 2, mem_texture = 4,
                                  mem_threadgroup_imageblock = 8, mem_object_data = 16 };
MSLEMU_AI constexpr mem_flags operator|(mem_flags a, mem_flags b) { return (mem_flags)((unsigned)a | (unsigned)b); }
MSLEMU_AI constexpr mem_flags operator&(mem_flags a, mem_flags b) { return (mem_flags)((unsigned)a & (unsigned)b); }
inline void threadgroup_barrier(mem_flags f, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  mslemu::barrier((int)f, file, line);
}
inline void simdgroup_barrier(mem_flags f, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  mslemu::simd_barrier((int)f, file, line);
}

// memory orders and scopes of the atomic functions and fences
enum memory_order { memory_order_relaxed, memory_order_acquire, memory_order_release, memory_order_acq_rel,
                    memory_order_seq_cst };
enum thread_scope { thread_scope_thread, thread_scope_simdgroup, thread_scope_threadgroup, thread_scope_device };
// the emulator runs a threadgroup's threads one at a time in one process and shares device
// memory between processes, so every access is already ordered: a fence has nothing to do
inline void atomic_thread_fence(mem_flags, memory_order, thread_scope = thread_scope_device) {}
}  // namespace metal
