// The row reductions of LibTorch 2.x's CUDA LayerNorm, in its order, for kernels that fuse
// work around them and must produce its bits (adaln_layer_norm.cu). ATen runs one row per
// block of 128 threads (num_threads(): 4 warps); thread t reads the row's 4-element
// vectors t, t + 128, ... ; a warp combines by shuffles down 16, 8, 4, 2, 1; the 4 warps
// then combine as a tree (forward: row_stats_one_warp, where one warp emulates the four) or
// through shared memory and one more warp shuffle (backward's BlockReduceSum: row_sum, with
// a 128-thread group per row; a block may hold several such groups, each calling it with `t`
// = its thread index in the group and its own shared slots; every thread of the block must
// call it: it synchronises the block).
#pragma once

#include "kernels/cuda/fused_math.hpp"

namespace sg::kernels::cuda::layer_norm_order {

constexpr int kRowThreads = 128;
constexpr int kRowWarps = kRowThreads / 32;
constexpr int kVec = 4;

// Forward statistics with one warp standing in for ATen's 4-warp block: lane l holds the
// Welford partials of ATen's threads l + 32w (w = 0..3), each pushed over that thread's
// vectors t, t + 128, ... in ATen's order (fused_math::welford_push, 4 per vector) by the
// caller. Each virtual warp w combines by the same shuffles down 16, 8, 4, 2, 1 (lane l
// takes lane l + offset of the same w; lanes past 31 keep their own, as a real warp's do);
// lane 0 then runs ATen's tree over the 4 warps (w0 with w2 and w1 with w3, then the two) and
// divides by n. Returns {mean, variance (biased), 0} in every lane. No shared memory and no
// block barrier: a block holds independent rows, one per warp.
__device__ inline fused_math::WelfordLN row_stats_one_warp(fused_math::WelfordLN (&w)[kRowWarps], int n) {
  namespace fm = fused_math;
#pragma unroll
  for (int v = 0; v < kRowWarps; ++v) {
    for (int offset = 16; offset > 0; offset >>= 1) {
      const fm::WelfordLN other{__shfl_down_sync(0xffffffffu, w[v].mean, offset),
                                __shfl_down_sync(0xffffffffu, w[v].sigma2, offset),
                                __shfl_down_sync(0xffffffffu, w[v].count, offset)};
      w[v] = fm::welford_combine(w[v], other);
    }
  }
  static_assert(kRowWarps == 4, "ATen's tree over 4 warps");
  const fm::WelfordLN w01 = fm::welford_combine(fm::welford_combine(w[0], w[2]), fm::welford_combine(w[1], w[3]));
  // Lane 0's values are the row's; the other lanes computed the same steps on other partials.
  const float mean = __shfl_sync(0xffffffffu, w01.mean, 0);
  const float var = __shfl_sync(0xffffffffu, fm::fdiv(w01.sigma2, static_cast<float>(n)), 0);
  return {mean, var, 0.0f};
}

// ATen's WarpReduceSum: val += shuffle down 16, 8, 4, 2, 1.
__device__ inline float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v = fused_math::fadd(v, __shfl_down_sync(0xffffffffu, v, offset));
  return v;
}

// ATen's BlockReduceSum over a 128-thread row group: warp sums, the 4 warp results in
// `slots` (kRowWarps floats), then warp 0 sums them with zeros in its other lanes. The
// result is valid in thread t == 0.
__device__ inline float row_sum(float v, float* slots, int t) {
  const int warp = t / 32, lane = t % 32;
  v = warp_sum(v);
  __syncthreads();
  if (lane == 0) slots[warp] = v;
  __syncthreads();
  v = t < kRowWarps ? slots[lane] : 0.0f;
  if (warp == 0) v = warp_sum(v);
  return v;
}

}  // namespace sg::kernels::cuda::layer_norm_order
