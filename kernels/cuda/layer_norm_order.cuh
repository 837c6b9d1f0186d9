// The row reductions of LibTorch 2.x's CUDA LayerNorm, in its order, for kernels that fuse
// work around them and must produce its bits (adaln_layer_norm.cu). ATen runs one row per
// block of 128 threads (num_threads(): 4 warps); thread t reads the row's 4-element
// vectors t, t + 128, ... ; a warp combines by shuffles down 16, 8, 4, 2, 1; the 4 warps
// then combine as a tree (forward) or through shared memory and one more warp shuffle
// (backward's BlockReduceSum). Here a block may hold several such 128-thread row groups,
// each reducing one or more rows side by side; each calls these with `t` = its thread index
// in the group and its own shared slots. Every thread of the block must call them (they
// synchronise the block).
#pragma once

#include "kernels/cuda/fused_math.hpp"

namespace sg::kernels::cuda::layer_norm_order {

constexpr int kRowThreads = 128;
constexpr int kRowWarps = kRowThreads / 32;
constexpr int kVec = 4;

// The thread's Welford partials over its vectors t, t + 128, ... of kRows rows (ATen's
// compute_stats loop, per row); the caller pushes them (fused_math::welford_push, 4 per
// vector, in this order), from registers or memory. Then row_stats combines each row's
// partials across the row group as ATen does, the kRows rows side by side (independent
// chains: one row's shuffles and divisions hide another's latency), and returns each row's
// {mean, variance (biased, over n), 0}. `slots`: kRows * 3 * kRowWarps floats of shared
// memory for this row group.
template <int kRows>
__device__ inline void row_stats(fused_math::WelfordLN (&w)[kRows], int n, float (*slots)[3 * kRowWarps], int t) {
  namespace fm = fused_math;
  for (int offset = 16; offset > 0; offset >>= 1) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const fm::WelfordLN other{__shfl_down_sync(0xffffffffu, w[r].mean, offset),
                                __shfl_down_sync(0xffffffffu, w[r].sigma2, offset),
                                __shfl_down_sync(0xffffffffu, w[r].count, offset)};
      w[r] = fm::welford_combine(w[r], other);
    }
  }
  const int warp = t / 32, lane = t % 32;
  for (int offset = kRowWarps / 2; offset > 0; offset /= 2) {
    if (lane == 0 && warp >= offset && warp < 2 * offset) {
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        float* s = slots[r] + 3 * (warp - offset);
        s[0] = w[r].mean;
        s[1] = w[r].sigma2;
        s[2] = w[r].count;
      }
    }
    __syncthreads();
    if (lane == 0 && warp < offset) {
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        const float* s = slots[r] + 3 * warp;
        w[r] = fm::welford_combine(w[r], {s[0], s[1], s[2]});
      }
    }
    __syncthreads();
  }
  if (t == 0) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      slots[r][0] = w[r].mean;
      slots[r][1] = fm::fdiv(w[r].sigma2, static_cast<float>(n));
    }
  }
  __syncthreads();
#pragma unroll
  for (int r = 0; r < kRows; ++r) w[r] = {slots[r][0], slots[r][1], 0.0f};
}

// ATen's WarpReduceSum: val += shuffle down 16, 8, 4, 2, 1.
__device__ inline float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v = fused_math::fadd(v, __shfl_down_sync(0xffffffffu, v, offset));
  return v;
}

// ATen's BlockReduceSum over a 128-thread row group, for kSums values side by side (each
// summed in that order on its own): warp sums, the 4 warp results in `slots` (kSums *
// kRowWarps floats), then warp 0 sums them with zeros in its other lanes. The results are
// valid in thread t == 0.
template <int kSums>
__device__ inline void row_sums(float (&v)[kSums], float (*slots)[kRowWarps], int t) {
  const int warp = t / 32, lane = t % 32;
#pragma unroll
  for (int j = 0; j < kSums; ++j) v[j] = warp_sum(v[j]);
  __syncthreads();
  if (lane == 0) {
#pragma unroll
    for (int j = 0; j < kSums; ++j) slots[j][warp] = v[j];
  }
  __syncthreads();
#pragma unroll
  for (int j = 0; j < kSums; ++j) {
    v[j] = t < kRowWarps ? slots[j][lane] : 0.0f;
    if (warp == 0) v[j] = warp_sum(v[j]);
  }
}

}  // namespace sg::kernels::cuda::layer_norm_order
