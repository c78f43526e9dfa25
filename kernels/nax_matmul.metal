// nax_matmul.metal — C = A·B with Metal 4's tensor operations (the neural accelerators).
//
// Teaches MetalPerformancePrimitives' matmul2d: the matrices become tensors, each simdgroup
// runs one 32×32×32 multiply-accumulate per K step into a cooperative tensor (its share
// of C, in registers), and stores that tensor once at the end. Only documented API is
// used: nothing here depends on which lane holds which element of the accumulator.
//
// A: M×K half, B: K×N half, C: M×N float, all row-major; any M, N, K ≥ 1. There is no
// bounds code: each operand is a tensor whose extents end at the matrix edge, and the op
// reads zeros past an extent and drops stores past it.
//
// Buffers: 0 A, 1 B, 2 C, then M, N, K as constant uint& in buffers 3–5.
// Dispatch: threadgroups (ceil(N/64), ceil(M/64), 1) of 128 threads: four simdgroups in a
// 2×2 arrangement, each owning a 32×32 tile of the threadgroup's 64×64 tile of C.
// Needs Metal 4 (macOS 26.2): the op runs on the neural accelerators of M5-class GPUs.

#include <metal_stdlib>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
using namespace metal;
using namespace mpp::tensor_ops;

kernel void nax_matmul(device const half* A [[buffer(0)]],
                       device const half* B [[buffer(1)]],
                       device float*      C [[buffer(2)]],
                       constant uint&     M [[buffer(3)]],
                       constant uint&     N [[buffer(4)]],
                       constant uint&     K [[buffer(5)]],
                       uint2  tg [[threadgroup_position_in_grid]],
                       ushort sg [[simdgroup_index_in_threadgroup]])
{
    constexpr int T = 32;  // rows and columns of C per simdgroup, and the K step

    // The matrices as tensors: extent 0 is the contiguous dimension, so (columns, rows).
    using extents_t = dextents<int32_t, 2>;
    auto tA = tensor<device const half, extents_t, tensor_inline>(A, extents_t(K, M));
    auto tB = tensor<device const half, extents_t, tensor_inline>(B, extents_t(N, K));
    auto tC = tensor<device float, extents_t, tensor_inline>(C, extents_t(N, M));
    using a_view = decltype(tA.slice(0, 0));
    using b_view = decltype(tB.slice(0, 0));

    // This simdgroup's 32×32 tile of C.
    const int row0 = tg.y * 64 + (sg / 2) * T;
    const int col0 = tg.x * 64 + (sg % 2) * T;

    // One 32×32×32 product per run, executed by the 32 threads of this simdgroup.
    constexpr auto desc = matmul2d_descriptor(T, T, T, false, false, false,
                                              matmul2d_descriptor::mode::multiply_accumulate);
    matmul2d<desc, execution_simdgroup> op;

    // The accumulator: the op decides how its 32×32 elements are spread over the lanes.
    auto acc = op.get_destination_cooperative_tensor<a_view, b_view, float>();
    for (uint16_t i = 0; i < acc.get_capacity(); ++i)
        if (acc.get_mask(i))
            acc[i] = 0.0f;

    for (int k = 0; k < int(K); k += T) {
        auto a = tA.slice(k, row0);  // A from row row0, column k: rows of the tile, a K step
        auto b = tB.slice(col0, k);  // B from row k, column col0
        op.run(a, b, acc);           // acc += a·b over 32 rows, 32 columns, 32 of K
    }

    auto c = tC.slice(col0, row0);
    acc.store(c);  // only the elements inside C's extents
}
