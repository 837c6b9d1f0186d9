// The row reductions of LibTorch 2.x's CUDA LayerNorm, in its order, for kernels that fuse
// work around them and must produce its bits (adaln_layer_norm.cu). ATen runs one row per
// block of 128 threads (num_threads(): 4 warps); thread t reads the row's 4-element
// vectors t, t + 128, ... ; a warp combines by shuffles down 16, 8, 4, 2, 1; the 4 warps
// then combine as a tree (forward) or through shared memory and one more warp shuffle
// (backward's BlockReduceSum).
//
// Here a row group of kRowLanes threads (128, 64 or 32) plays ATen's 128 row threads:
// thread t of the group plays ATen's threads t + j * kRowLanes, j < kPlays = 128 / kRowLanes
// (its "plays"), each with its own partial, so every value goes through the same operations
// in the same order as in ATen. A play's warp shuffles are the thread's own shuffles (lane l
// of ATen's warp is lane l here); ATen's warp a is play a / (kRowLanes / 32) of physical
// warp a % (kRowLanes / 32), so where a combine's two warps are plays of one thread it runs
// in registers, otherwise through shared memory. Several row groups share a block, each with
// its own `slots`; with kRowLanes = 32 a row is one warp and needs neither shared memory (the
// slots go unused) nor block barriers. Every thread of the block must call these (for
// kRowLanes >= 64 they synchronise the block).
#pragma once

#include "kernels/common/cuda/fused_math.hpp"

#include <type_traits>

namespace sg::kernels::cuda::layer_norm_order {

constexpr int kRowThreads = 128;
constexpr int kRowWarps = kRowThreads / 32;
constexpr int kVec = 4;
constexpr int log2_of(int v) { return v <= 1 ? 0 : 1 + log2_of(v / 2); }
constexpr int kCombineLevels = 5 + log2_of(kRowWarps);  // the shuffle levels, then the warp tree's

template <int kRowLanes>
struct RowLayout {
  static_assert(kRowLanes == 32 || kRowLanes == 64 || kRowLanes == 128,
                "a row group is 32, 64 or 128 threads");
  static constexpr int kPlays = kRowThreads / kRowLanes;  // ATen threads per thread
  static constexpr int kWarps = kRowLanes / 32;           // physical warps per row
  // The ATen thread that play j of thread t is.
  __host__ __device__ static constexpr int aten_thread(int t, int j) { return t + j * kRowLanes; }
};

// The row's Welford statistics from each play's partial over its vectors a, a + 128, ...
// (a = aten_thread(t, j); ATen's compute_stats loop; the caller pushes them with
// fused_math::welford_push, 4 per vector, in this order, from registers or memory). Combines
// the partials as ATen does, combine(level, own, other) at levels 0-4 (shuffles down
// 16 ... 1) and 5-6 (the warp tree), and returns {mean, variance (biased, over n), 0} to
// every thread of the group. `combine` is fused_math::welford_combine, or
// welford_combine_equal where every ATen thread pushed the same count. `slots`: 3 *
// kRowWarps floats of shared memory for this row group (unused with kRowLanes = 32).
template <int kRowLanes, typename Combine>
__device__ inline fused_math::WelfordLN row_stats(
    fused_math::WelfordLN (&w)[RowLayout<kRowLanes>::kPlays], int n, float* slots, int t,
    Combine&& combine) {
  namespace fm = fused_math;
  using L = RowLayout<kRowLanes>;
#pragma unroll
  for (int level = 0; level < 5; ++level) {  // shuffles down 16, 8, 4, 2, 1
    const int offset = 16 >> level;
#pragma unroll
    for (int j = 0; j < L::kPlays; ++j) {
      const fm::WelfordLN other{__shfl_down_sync(0xffffffffu, w[j].mean, offset),
                                __shfl_down_sync(0xffffffffu, w[j].sigma2, offset),
                                __shfl_down_sync(0xffffffffu, w[j].count, offset)};
      w[j] = combine(level, w[j], other);
    }
  }
  // ATen's tree over its 4 warps, levels 5 (offset 2: warps 0, 1 take warps 2, 3) and 6
  // (offset 1): warp a < offset takes warp a + offset's partial (lane 0's; the other lanes'
  // results are never read).
  static_assert(kRowWarps == 4, "ATen's LayerNorm rows are 4 warps");
  const int warp = t / 32, lane = t % 32;
  auto tree_level = [&](auto level_c, auto offset_c) {
    constexpr int kLevel = decltype(level_c)::value, kOffset = decltype(offset_c)::value;
    if constexpr (kOffset >=
                  L::kWarps) {  // warp a + offset is play j + offset / kWarps of this thread
      constexpr int kStep = kOffset / L::kWarps;
#pragma unroll
      for (int j = 0; j < kStep; ++j) w[j] = combine(kLevel, w[j], w[j + kStep]);
    } else {  // both are play 0, of physical warps a and a + offset
      if (lane == 0 && warp >= kOffset && warp < 2 * kOffset) {
        float* s = slots + 3 * (warp - kOffset);
        s[0] = w[0].mean;
        s[1] = w[0].sigma2;
        s[2] = w[0].count;
      }
      __syncthreads();
      if (lane == 0 && warp < kOffset) {
        const float* s = slots + 3 * warp;
        w[0] = combine(kLevel, w[0], fm::WelfordLN{s[0], s[1], s[2]});
      }
      __syncthreads();
    }
  };
  tree_level(std::integral_constant<int, 5>{}, std::integral_constant<int, 2>{});
  tree_level(std::integral_constant<int, 6>{}, std::integral_constant<int, 1>{});
  if constexpr (L::kWarps == 1) {
    return {__shfl_sync(0xffffffffu, w[0].mean, 0),
            fm::fdiv(__shfl_sync(0xffffffffu, w[0].sigma2, 0), static_cast<float>(n)), 0.0f};
  } else {
    if (t == 0) {
      slots[0] = w[0].mean;
      slots[1] = fm::fdiv(w[0].sigma2, static_cast<float>(n));
    }
    __syncthreads();
    return {slots[0], slots[1], 0.0f};
  }
}

// ATen's WarpReduceSum: val += shuffle down 16, 8, 4, 2, 1.
__device__ inline float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1)
    v = fused_math::fadd(v, __shfl_down_sync(0xffffffffu, v, offset));
  return v;
}

// ATen's BlockReduceSum over a row's 128 ATen threads, v[j] play j's value: warp sums, the 4
// warp results in slots[0 .. 3], then warp 0 sums them by shuffles with zeros in its other
// lanes. Returned to every thread of the group. `slots`: kRowWarps + 1 floats of shared
// memory (unused with kRowLanes = 32).
template <int kRowLanes>
__device__ inline float row_sum(float (&v)[RowLayout<kRowLanes>::kPlays], float* slots, int t) {
  namespace fm = fused_math;
  using L = RowLayout<kRowLanes>;
#pragma unroll
  for (int j = 0; j < L::kPlays; ++j) v[j] = warp_sum(v[j]);
  if constexpr (L::kWarps == 1) {
    // Warp 0's shuffles over {s0, s1, s2, s3, 0, ...}: lane l < 4 adds three zeros (offsets
    // 16, 8, 4), then lane 0 ends with (z0 + z2) + (z1 + z3).
    float z[kRowWarps];
#pragma unroll
    for (int a = 0; a < kRowWarps; ++a) z[a] = fm::fadd(fm::fadd(fm::fadd(v[a], 0.0f), 0.0f), 0.0f);
    return __shfl_sync(0xffffffffu, fm::fadd(fm::fadd(z[0], z[2]), fm::fadd(z[1], z[3])), 0);
  } else {
    const int warp = t / 32, lane = t % 32;
    __syncthreads();
    if (lane == 0) {
#pragma unroll
      for (int j = 0; j < L::kPlays; ++j) slots[warp + j * L::kWarps] = v[j];
    }
    __syncthreads();
    float s = t < kRowWarps ? slots[lane] : 0.0f;
    if (warp == 0) s = warp_sum(s);
    if (t == 0) slots[kRowWarps] = s;
    __syncthreads();
    return slots[kRowWarps];
  }
}

}  // namespace sg::kernels::cuda::layer_norm_order
