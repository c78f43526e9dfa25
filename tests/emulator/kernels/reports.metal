// Kernels whose reports tests/emulator/test_reports.py checks: the access kind of an
// out-of-bounds access, a barrier under a condition, infinite loops, a jump to nowhere,
// and the facts every report carries. Line numbers are part of the tests.
#include <metal_stdlib>
using namespace metal;

kernel void tg_oob(device float* out [[buffer(0)]], constant uint& write [[buffer(1)]],
                   uint tid [[thread_index_in_threadgroup]]) {
  threadgroup float tile[16];
  tile[tid] = 1.0f;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (write != 0 && tid == 3) tile[16 + tid] = 2.0f;  // line 12
  if (write == 0) out[tid] = tile[tid + 1];  // line 13: thread 15 reads tile[16]
}

kernel void barrier_under_if(device float* out [[buffer(0)]], uint2 lid [[thread_position_in_threadgroup]]) {
  threadgroup float s[32];
  if (lid.x == 0) {
    s[0] = 1.0f;  // line 19
    threadgroup_barrier(mem_flags::mem_threadgroup);  // line 20
  }
  out[lid.x] = s[0];  // line 22
}

kernel void for_ever(device int* out [[buffer(0)]]) {
  for (;;) {}  // line 26: a loop without side effects, which C++ would let a compiler delete
}

kernel void jump_to_nowhere(device int* out [[buffer(0)]]) {
  ((void (*)())1)();  // line 30 (C++ the shim compiles, not Metal)
}

kernel void shim_warning(device int* out [[buffer(0)]]) {
  mslemu::portability(__FILE__, __LINE__, "a warning raised by the emulator's library");
  out[0] = 1;
}

// an out-of-bounds read of A at line 47, which -O2 code used to report at line 42
kernel void oob_line(device const float* A [[buffer(0)]], device float* C [[buffer(1)]],
                     constant uint& N [[buffer(2)]], uint2 pos [[thread_position_in_grid]])
{
    const uint row = pos.y;  // line 42
    const uint col = pos.x;

    {
        const uint i = row * N + col;
        C[i] = 2.0f * A[i];  // line 47
    }
}
