// Two things Apple GPUs do that the Metal specification does not promise, as MLX's gemv.h
// relies on them (our own kernels, written the same way): the emulator runs them with
// Apple's results and a PortabilityWarning naming the lines (tests/emulator/test_apple_behaviour.py).
#include <metal_stdlib>
using namespace metal;

// 1. one thread's threadgroup write and another's read, ordered only by a barrier without
//    mem_flags::mem_threadgroup (gemv's threadgroup reduction)
kernel void mem_none_reduction(device const float* in [[buffer(0)]],
                               device float* out [[buffer(1)]],
                               uint sg [[simdgroup_index_in_threadgroup]],
                               uint lane [[thread_index_in_simdgroup]],
                               uint t [[thread_index_in_threadgroup]]) {
  threadgroup float partial[4];
  float v = simd_sum(in[t]);
  if (lane == 0) {
    partial[sg] = v;
    threadgroup_barrier(mem_flags::mem_none);
    if (sg == 0) {
      for (int k = 1; k < 4; ++k) v += partial[k];
      out[0] = v;
    }
  }
}

// 2. a barrier inside a loop that some lanes of a simdgroup skip, followed by a simd-group
//    function all lanes reach (gemv_t at an edge: columns past the end skip the loop)
kernel void divergent_barrier(device const float* in [[buffer(0)]],
                              device float* out [[buffer(1)]],
                              constant int& n [[buffer(2)]],
                              uint t [[thread_index_in_threadgroup]]) {
  float acc = 0.0f;
  if (int(t) < n) {
    for (int k = 0; k < 3; ++k) {
      threadgroup_barrier(mem_flags::mem_none);
      acc += in[t] * float(k + 1);
    }
  }
  acc += simd_shuffle_down(acc, 1);
  out[t] = acc;
}
