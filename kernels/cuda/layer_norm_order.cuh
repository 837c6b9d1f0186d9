// The row reductions of LibTorch 2.x's CUDA LayerNorm, in its order, for kernels that fuse
// work around them and must produce its bits (adaln_layer_norm.cu). ATen runs one row per
// block of 128 threads (num_threads(): 4 warps); thread t reads the row's 4-element
// vectors t, t + 128, ... ; a warp combines by shuffles down 16, 8, 4, 2, 1; the 4 warps
// then combine as a tree (forward) or through shared memory and one more warp shuffle
// (backward's BlockReduceSum). Here a block may hold several such 128-thread row groups;
// each calls these with `t` = its thread index in the group and its own shared slots. Every
// thread of the block must call them (they synchronise the block).
#pragma once

#include "kernels/cuda/fused_math.hpp"

namespace sg::kernels::cuda::layer_norm_order {

constexpr int kRowThreads = 128;
constexpr int kRowWarps = kRowThreads / 32;
constexpr int kVec = 4;

// The thread's Welford partial over its vectors t, t + 128, ... (ATen's compute_stats loop);
// the caller pushes them (fused_math::welford_push, 4 per vector, in this order), from
// registers or memory. Then row_stats combines the partials of the row group as ATen does,
// combine(level, own, other) at levels 0-4 (shuffles down 16 ... 1) and 5-6 (the warp
// tree), and returns {mean, variance (biased, over n), 0}. `combine` is
// fused_math::welford_combine, or welford_combine_equal where every thread pushed the same
// count (it takes the level's count and weight instead of dividing). `slots`: 3 * kRowWarps
// floats of shared memory for this row group.
template <typename Combine>
__device__ inline fused_math::WelfordLN row_stats(fused_math::WelfordLN w, int n, float* slots, int t,
                                                  Combine&& combine) {
  namespace fm = fused_math;
  int level = 0;
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1, ++level) {
    const fm::WelfordLN other{__shfl_down_sync(0xffffffffu, w.mean, offset),
                              __shfl_down_sync(0xffffffffu, w.sigma2, offset),
                              __shfl_down_sync(0xffffffffu, w.count, offset)};
    w = combine(level, w, other);
  }
  const int warp = t / 32, lane = t % 32;
#pragma unroll
  for (int offset = kRowWarps / 2; offset > 0; offset /= 2, ++level) {
    if (lane == 0 && warp >= offset && warp < 2 * offset) {
      float* s = slots + 3 * (warp - offset);
      s[0] = w.mean;
      s[1] = w.sigma2;
      s[2] = w.count;
    }
    __syncthreads();
    if (lane == 0 && warp < offset) {
      const float* s = slots + 3 * warp;
      w = combine(level, w, fm::WelfordLN{s[0], s[1], s[2]});
    }
    __syncthreads();
  }
  if (t == 0) {
    slots[0] = w.mean;
    slots[1] = fm::fdiv(w.sigma2, static_cast<float>(n));
  }
  __syncthreads();
  return {slots[0], slots[1], 0.0f};
}
constexpr int log2_of(int v) { return v <= 1 ? 0 : 1 + log2_of(v / 2); }
constexpr int kCombineLevels = 5 + log2_of(kRowWarps);  // the shuffle levels, then the warp tree's

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
