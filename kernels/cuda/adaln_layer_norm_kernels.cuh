// The device code of ADALN's modulate with the LayerNorm inside (adaln_layer_norm.cu holds
// the host side: applies checks, launches). Kept free of ATen so that a standalone CUDA
// program can time these kernels against experiments (benchmarks/experiments/).
#pragma once

#include "kernels/cuda/fused_math.hpp"
#include "kernels/cuda/layer_norm_order.cuh"
#include "kernels/cuda/vector_access.cuh"

#include <cstdint>

namespace sg::kernels::cuda::modulate_ln {

namespace fm = fused_math;
namespace lno = layer_norm_order;
using lno::kRowThreads;
using lno::kRowWarps;
using lno::kVec;

constexpr int kMaxGroupsPerBlock = 4;  // threads <= 512
constexpr int kMaxThreads = kMaxGroupsPerBlock * kRowThreads;

// The rows a 128-thread group of the block handles, kRows consecutive ones from `first`,
// and the thread's index in the group. More rows per group keep more of x's loads in flight
// per thread and run the rows' reductions side by side; each row is still reduced by its
// 128 threads in ATen's order.
template <int kRows>
struct RowGroup {
  int group, t;
  int64_t first;
  bool valid[kRows];
  int64_t row_or_0[kRows];  // the row, or 0 past the last row (no access is made there)

  __device__ explicit RowGroup(int64_t rows) {
    group = threadIdx.x / kRowThreads;
    t = threadIdx.x % kRowThreads;
    first = (static_cast<int64_t>(blockIdx.x) * (blockDim.x / kRowThreads) + group) * kRows;
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      valid[r] = first + r < rows;
      row_or_0[r] = valid[r] ? first + r : 0;
    }
  }
};

// A thread's vectors i = t + k * 128 of each of its group's rows, k < kCached, held in
// registers between the passes in x's own type (all loads issued before the first use);
// with kCached == 0 every pass reads them again (rows longer than 128 * kCached vectors).
constexpr int kCachedVectors = 4;
// 1 / n for the counts of a thread's pushes from registers (n = 4k + e + 1), correctly rounded
// (the compiler divides at compile time, as __fdiv_rn would at run time).
static __constant__ float kReciprocal[kCachedVectors * kVec] = {
    1.0f / 1,  1.0f / 2,  1.0f / 3,  1.0f / 4,  1.0f / 5,  1.0f / 6,  1.0f / 7,  1.0f / 8,
    1.0f / 9,  1.0f / 10, 1.0f / 11, 1.0f / 12, 1.0f / 13, 1.0f / 14, 1.0f / 15, 1.0f / 16};

template <typename TX, int kCached, int kRows>
struct RowCache {
  static constexpr int kSlots = kCached > 0 ? kCached : 1;
  Pack<TX, kVec> x[kRows][kSlots];
  float g[kRows][kSlots][kVec];
};

template <typename TX, int kCached, int kRows>
__global__ void __launch_bounds__(kMaxThreads)
    modulate_ln_fwd_kernel(const TX* __restrict__ x, const float* __restrict__ scale,
                           const float* __restrict__ shift, float* __restrict__ out, float* __restrict__ mean_out,
                           float* __restrict__ rstd_out, int64_t rows, int n, int64_t seq, int64_t scale_stride,
                           int64_t shift_stride, float eps) {
  __shared__ float slots[kMaxGroupsPerBlock][kRows][3 * kRowWarps];
  const RowGroup<kRows> g(rows);
  const int nv = n / kVec;
  auto has = [&](int r, int i) { return g.valid[r] && i < nv; };
  auto row_x = [&](int r) { return x + g.row_or_0[r] * n; };
  RowCache<TX, kCached, kRows> c;
  fm::WelfordLN w[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) w[r] = {0.0f, 0.0f, 0.0f};
  if constexpr (kCached > 0) {
#pragma unroll
    for (int r = 0; r < kRows; ++r)
#pragma unroll
      for (int k = 0; k < kCached; ++k)
        if (has(r, g.t + k * kRowThreads)) c.x[r][k] = load<kVec>(row_x(r), (g.t + k * kRowThreads) * kVec);
    // A thread's valid vectors are k = 0 .. some K - 1, so its count before a push is 4k + e.
#pragma unroll
    for (int r = 0; r < kRows; ++r)
#pragma unroll
      for (int k = 0; k < kCached; ++k)
        if (has(r, g.t + k * kRowThreads)) {
          float v[kVec];
          widen(c.x[r][k], v);
#pragma unroll
          for (int e = 0; e < kVec; ++e) w[r] = fm::welford_push(w[r], v[e], kReciprocal[k * kVec + e]);
        }
  } else {
#pragma unroll
    for (int r = 0; r < kRows; ++r)
      for (int i = g.t; has(r, i); i += kRowThreads) {
        float v[kVec];
        load_float<kVec>(row_x(r), i * kVec, v);
#pragma unroll
        for (int e = 0; e < kVec; ++e) w[r] = fm::welford_push(w[r], v[e]);
      }
  }
  lno::row_stats<kRows>(w, n, slots[g.group], g.t);
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    if (!g.valid[r]) continue;
    const int64_t row = g.row_or_0[r];
    const float mean = w[r].mean;
    const float rstd = rsqrtf(fm::fadd(w[r].sigma2, eps));  // ATen: c10::cuda::compat::rsqrt
    const int64_t b = row / seq;
    const float* sc = scale + b * scale_stride;
    const float* sh = shift + b * shift_stride;
    float* o = out + row * n;
    auto emit = [&](int i, const float(&v)[kVec]) {
      const auto scv = load<kVec>(sc, i * kVec);
      const auto shv = load<kVec>(sh, i * kVec);
      Pack<float, kVec> res;
#pragma unroll
      for (int e = 0; e < kVec; ++e)
        res.v[e] = fm::modulate_forward(fm::layer_norm_normalize(v[e], mean, rstd), scv.v[e], shv.v[e]);
      store<kVec>(o, i * kVec, res);
    };
    if constexpr (kCached > 0) {
#pragma unroll
      for (int k = 0; k < kCached; ++k)
        if (has(r, g.t + k * kRowThreads)) {
          float v[kVec];
          widen(c.x[r][k], v);
          emit(g.t + k * kRowThreads, v);
        }
    } else {
      for (int i = g.t; i < nv; i += kRowThreads) {
        float v[kVec];
        load_float<kVec>(row_x(r), i * kVec, v);
        emit(i, v);
      }
    }
    if (g.t == 0) {
      mean_out[row] = mean;
      rstd_out[row] = rstd;
    }
  }
}

// Calls f(r, i, g, x) for thread t's vectors i = t, t + 128, ... < nv of each valid row r
// of its group: from the registers in c (filled by read(r, i, g, x) first when read_first,
// every load of the group's rows issued before the first f), or, with kCached == 0, reading
// each vector again.
template <typename TX, int kCached, int kRows, typename Read, typename F>
__device__ inline void each_vector(const RowGroup<kRows>& rg, int nv, RowCache<TX, kCached, kRows>& c,
                                   bool read_first, Read&& read, F&& f) {
  const int t = rg.t;
  if constexpr (kCached > 0) {
    if (read_first) {
#pragma unroll
      for (int r = 0; r < kRows; ++r)
#pragma unroll
        for (int k = 0; k < kCached; ++k)
          if (rg.valid[r] && t + k * kRowThreads < nv) read(r, t + k * kRowThreads, c.g[r][k], c.x[r][k]);
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r)
#pragma unroll
      for (int k = 0; k < kCached; ++k)
        if (rg.valid[r] && t + k * kRowThreads < nv) f(r, t + k * kRowThreads, c.g[r][k], c.x[r][k]);
  } else {
#pragma unroll
    for (int r = 0; r < kRows; ++r)
      for (int i = t; rg.valid[r] && i < nv; i += kRowThreads) {
        float g[kVec];
        Pack<TX, kVec> v;
        read(r, i, g, v);
        f(r, i, g, v);
      }
  }
}

// grad: float32 grad of the modulated output. Pass 1 writes grad * normed (for scale's
// grad) and sums LayerNorm backward's row terms over dy = grad * (1 + scale); pass 2 writes
// x's grad (ATen's float32 value, then cast to x's dtype as autocast's ToCopyBackward does).
template <typename TX, int kCached, int kRows>
__global__ void __launch_bounds__(kMaxThreads)
    modulate_ln_bwd_kernel(const float* __restrict__ grad, const TX* __restrict__ x, const float* __restrict__ mean,
                           const float* __restrict__ rstd, const float* __restrict__ scale, TX* __restrict__ dx,
                           float* __restrict__ g_scale_elem, int64_t rows, int n, int64_t seq,
                           int64_t scale_stride) {
  __shared__ float slots[kMaxGroupsPerBlock][2 * kRows][kRowWarps];
  __shared__ float sums[kMaxGroupsPerBlock][2 * kRows];
  const RowGroup<kRows> rg(rows);
  const int nv = n / kVec;
  int64_t off[kRows];
  float m[kRows], rs[kRows];
  const float* sc[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    off[r] = rg.row_or_0[r] * n;
    m[r] = rg.valid[r] ? mean[rg.row_or_0[r]] : 0.0f;
    rs[r] = rg.valid[r] ? rstd[rg.row_or_0[r]] : 0.0f;
    sc[r] = scale + rg.row_or_0[r] / seq * scale_stride;
  }
  auto read = [&](int r, int i, float(&g)[kVec], Pack<TX, kVec>& v) {
    load_float<kVec>(grad + off[r], i * kVec, g);
    v = load<kVec>(x + off[r], i * kVec);
  };
  // sum[2r]: the row's sum of dy; sum[2r + 1]: of dy * (x - mean) * rstd.
  float sum[2 * kRows];
#pragma unroll
  for (int j = 0; j < 2 * kRows; ++j) sum[j] = 0.0f;
  auto terms = [&](int r, int i, const float(&g)[kVec], const Pack<TX, kVec>& xv) {
    float v[kVec];
    widen(xv, v);
    const auto scv = load<kVec>(sc[r], i * kVec);
    Pack<float, kVec> gs;
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      float dy;
      fm::modulate_backward(g[e], fm::layer_norm_normalize(v[e], m[r], rs[r]), scv.v[e], dy, gs.v[e]);
      fm::layer_norm_grad_terms(dy, v[e], m[r], rs[r], sum[2 * r], sum[2 * r + 1]);
    }
    store<kVec>(g_scale_elem + off[r], i * kVec, gs);
  };
  RowCache<TX, kCached, kRows> c;
  each_vector(rg, nv, c, /*read_first=*/true, read, terms);
  lno::row_sums<2 * kRows>(sum, slots[rg.group], rg.t);
  if (rg.t == 0) {
#pragma unroll
    for (int j = 0; j < 2 * kRows; ++j) sums[rg.group][j] = sum[j];
  }
  __syncthreads();
#pragma unroll
  for (int j = 0; j < 2 * kRows; ++j) sum[j] = sums[rg.group][j];
  const float fn = static_cast<float>(n);
  float term1[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) term1[r] = fm::fmul(fm::fdiv(1.0f, fn), rs[r]);
  auto emit = [&](int r, int i, const float(&g)[kVec], const Pack<TX, kVec>& xv) {
    float v[kVec];
    widen(xv, v);
    const auto scv = load<kVec>(sc[r], i * kVec);
    Pack<TX, kVec> res;
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      const float dy = fm::modulate_grad_normed(g[e], scv.v[e]);
      res.v[e] =
          fm::from_float<TX>(fm::layer_norm_grad_input(dy, v[e], m[r], rs[r], sum[2 * r], sum[2 * r + 1], fn, term1[r]));
    }
    store<kVec>(dx + off[r], i * kVec, res);
  };
  each_vector(rg, nv, c, /*read_first=*/false, read, emit);
}

}  // namespace sg::kernels::cuda::modulate_ln
