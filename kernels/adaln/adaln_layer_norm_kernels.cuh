// The device code of ADALN's modulate with the LayerNorm inside (adaln_layer_norm.cu holds
// the host side: applies checks, launches). Kept free of ATen so that a standalone CUDA
// program can time these kernels against experiments (benchmarks/experiments/).
#pragma once

#include "kernels/adaln/layer_norm_order.cuh"
#include "kernels/common/cuda/fused_math.hpp"
#include "kernels/common/cuda/vector_access.cuh"

#include <cstdint>

namespace sg::kernels::cuda::modulate_ln {

namespace fm = fused_math;
namespace lno = layer_norm_order;
using lno::kRowThreads;
using lno::kRowWarps;
using lno::kVec;

constexpr int kMaxThreads = 512;

// The row this thread's group of kRowLanes threads handles, and the thread's index in it.
struct RowSlot {
  int group, t;
  int64_t row;
  bool valid;
};
template <int kRowLanes>
__device__ inline RowSlot row_slot(int64_t rows) {
  RowSlot s;
  s.group = threadIdx.x / kRowLanes;
  s.t = threadIdx.x % kRowLanes;
  s.row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / kRowLanes) + s.group;
  s.valid = s.row < rows;
  return s;
}
// Shared memory for the row groups of a block: 3 * kRowWarps floats each (row_stats; row_sum
// takes kRowWarps + 1). Row groups of one warp use none.
template <int kRowLanes>
struct RowSlots {
  static constexpr int kGroups = kRowLanes == 32 ? 1 : kMaxThreads / kRowLanes;
  float f[kGroups][3 * kRowWarps];
  __device__ float* of(int group) { return f[kRowLanes == 32 ? 0 : group]; }
};

// A play's vectors a + k * 128 (a its ATen thread), k < kCached, held in registers between
// the passes in x's own type (all loads issued before the first use), slot j * kCached + k;
// with kCached == 0 every pass reads them again (rows longer than 128 * kCachedVectors
// vectors).
constexpr int kCachedVectors = 4;
// 1 / n for the counts of a play's pushes from registers (n = 4k + e + 1), correctly rounded
// (the compiler divides at compile time, as __fdiv_rn would at run time).
static __constant__ float kReciprocal[kCachedVectors * kVec] = {
    1.0f / 1, 1.0f / 2,  1.0f / 3,  1.0f / 4,  1.0f / 5,  1.0f / 6,  1.0f / 7,  1.0f / 8,
    1.0f / 9, 1.0f / 10, 1.0f / 11, 1.0f / 12, 1.0f / 13, 1.0f / 14, 1.0f / 15, 1.0f / 16};

template <typename TX, int kCached, int kPlays, bool kGrad>
struct RowCache {
  static constexpr int kSlots = kCached > 0 ? int{kCached} * kPlays : 1;
  Pack<TX, kVec> x[kSlots];
  float g[kGrad ? kSlots : 1][kVec];
};

// Rows where every ATen thread holds exactly kCached vectors (C = 512 * kCached): each
// combine level joins equal counts, 4 * kCached * 2^level elements (a constant), and
// welford_combine_equal takes that level's half[level] = welford_equal_weight(count)
// (computed once, on the host, by equal_weights) instead of an IEEE division per combine.
struct EqualWeights {
  float half[lno::kCombineLevels];
};
__host__ __device__ constexpr float equal_count(int cached_vectors, int level) {
  return static_cast<float>((kVec * cached_vectors) << level);
}
inline EqualWeights equal_weights(int cached_vectors) {
  EqualWeights e{};
  for (int level = 0; level < lno::kCombineLevels; ++level)
    e.half[level] = fm::welford_equal_weight(equal_count(cached_vectors, level));
  return e;
}

// The row's statistics from the plays' partial states in ATen's combine order
// (lno::row_stats); with kEqual the combines join equal counts with precomputed weights.
// Every thread of the block calls it (row_stats may synchronise the block).
template <int kRowLanes, int kCached, bool kEqual>
__device__ __forceinline__ fm::WelfordLN combined_stats(
    fm::WelfordLN (&w)[lno::RowLayout<kRowLanes>::kPlays], int n, float* slots, int t,
    EqualWeights equal) {
  if constexpr (kEqual) {
    return lno::row_stats<kRowLanes>(
        w, n, slots, t, [&](int level, fm::WelfordLN b, fm::WelfordLN a) {
          return fm::welford_combine_equal(b, a, equal_count(kCached, level), equal.half[level]);
        });
  } else {
    return lno::row_stats<kRowLanes>(w, n, slots, t, [](int, fm::WelfordLN b, fm::WelfordLN a) {
      return fm::welford_combine(b, a);
    });
  }
}

// kEqual: the row fills every play's kCached slots (see EqualWeights): the pushes need no
// per-vector guard (their counts fold to constants) and the combines no division. The
// statistics' operations and order are the same either way, and for every kRowLanes.
// kMinBlocks: blocks of kMaxThreads per SM the registers must allow (2 caps a thread at 64;
// only the lab uses it: capped, the kernel spilled and ran slower, modulate_lab_h200.md).
template <typename TX, int kCached, bool kEqual, int kRowLanes, int kMinBlocks = 1>
__global__ void __launch_bounds__(kMaxThreads, kMinBlocks)
    modulate_ln_fwd_kernel(const TX* __restrict__ x, const float* __restrict__ scale,
                           const float* __restrict__ shift, float* __restrict__ out,
                           float* __restrict__ mean_out, float* __restrict__ rstd_out, int64_t rows,
                           int n, int64_t seq, int64_t scale_stride, int64_t shift_stride,
                           float eps, EqualWeights equal) {
  static_assert(!kEqual || kCached > 0, "equal counts need the register cache");
  using L = lno::RowLayout<kRowLanes>;
  constexpr int kPlays = L::kPlays;
  __shared__ RowSlots<kRowLanes> slots;
  const RowSlot s = row_slot<kRowLanes>(rows);
  const int nv = s.valid ? n / kVec : 0;
  auto has = [&](int i) { return kEqual ? s.valid : i < nv; };
  // Play j's vector k.
  auto vec = [&](int j, int k) { return L::aten_thread(s.t, j) + k * kRowThreads; };
  const TX* xr = x + (s.valid ? s.row : 0) * n;
  RowCache<TX, kCached, kPlays, false> c;
  fm::WelfordLN w[kPlays];
#pragma unroll
  for (int j = 0; j < kPlays; ++j) w[j] = fm::WelfordLN{0.0f, 0.0f, 0.0f};
  // f(j, k, v) for each cached vector k of play j that the row has (k ascending), v as float.
  auto each_cached = [&](auto&& f) {
#pragma unroll
    for (int k = 0; k < kCached; ++k)
#pragma unroll
      for (int j = 0; j < kPlays; ++j)
        if (has(vec(j, k))) {
          float v[kVec];
          widen(c.x[j * kCached + k], v);
          f(j, k, v);
        }
  };
  if constexpr (kCached > 0) {
#pragma unroll
    for (int j = 0; j < kPlays; ++j)
#pragma unroll
      for (int k = 0; k < kCached; ++k)
        if (has(vec(j, k))) c.x[j * kCached + k] = load<kVec>(xr, vec(j, k) * kVec);
    // A play's valid vectors are k = 0 .. some K - 1, so its count before a push is 4k + e.
    each_cached([&](int j, int k, const float(&v)[kVec]) {
#pragma unroll
      for (int e = 0; e < kVec; ++e) w[j] = fm::welford_push(w[j], v[e], kReciprocal[k * kVec + e]);
    });
  } else {
#pragma unroll
    for (int j = 0; j < kPlays; ++j)
      for (int i = vec(j, 0); i < nv; i += kRowThreads) {
        float v[kVec];
        load_float<kVec>(xr, i * kVec, v);
#pragma unroll
        for (int e = 0; e < kVec; ++e) w[j] = fm::welford_push(w[j], v[e]);
      }
  }
  const fm::WelfordLN stats =
      combined_stats<kRowLanes, kCached, kEqual>(w, n, slots.of(s.group), s.t, equal);
  if (!s.valid) return;
  const float rstd = rsqrtf(fm::fadd(stats.sigma2, eps));  // ATen: c10::cuda::compat::rsqrt
  const int64_t b = s.row / seq;
  const float* sc = scale + b * scale_stride;
  const float* sh = shift + b * shift_stride;
  float* o = out + s.row * n;
  auto emit = [&](int i, const float(&v)[kVec]) {
    const auto scv = load<kVec>(sc, i * kVec);
    const auto shv = load<kVec>(sh, i * kVec);
    Pack<float, kVec> r;
#pragma unroll
    for (int e = 0; e < kVec; ++e)
      r.v[e] = fm::modulate_forward(fm::layer_norm_normalize(v[e], stats.mean, rstd), scv.v[e],
                                    shv.v[e]);
    store<kVec>(o, i * kVec, r);
  };
  if constexpr (kCached > 0) {
    each_cached([&](int j, int k, const float(&v)[kVec]) { emit(vec(j, k), v); });
  } else {
    for (int i = s.t; i < nv; i += kRowLanes) {
      float v[kVec];
      load_float<kVec>(xr, i * kVec, v);
      emit(i, v);
    }
  }
  if (s.t == 0) {
    mean_out[s.row] = stats.mean;
    rstd_out[s.row] = rstd;
  }
}

// Calls f(j, i, g, v) for each play j's vectors i = a, a + 128, ... < nv of the row (a its
// ATen thread, in that order per play), v the vector of x widened to float: from the
// registers in c (filled by read(i, g, x) first when read_first), or, with kCached == 0,
// reading each vector again.
template <int kRowLanes, typename TX, int kCached, int kPlays, typename Read, typename F>
__device__ inline void each_vector(int t, int nv, RowCache<TX, kCached, kPlays, true>& c,
                                   bool read_first, Read&& read, F&& f) {
  using L = lno::RowLayout<kRowLanes>;
  if constexpr (kCached > 0) {
    if (read_first) {
#pragma unroll
      for (int j = 0; j < kPlays; ++j)
#pragma unroll
        for (int k = 0; k < kCached; ++k) {
          const int i = L::aten_thread(t, j) + k * kRowThreads;
          if (i < nv) read(i, c.g[j * kCached + k], c.x[j * kCached + k]);
        }
    }
#pragma unroll
    for (int k = 0; k < kCached; ++k)
#pragma unroll
      for (int j = 0; j < kPlays; ++j) {
        const int i = L::aten_thread(t, j) + k * kRowThreads;
        if (i < nv) {
          float v[kVec];
          widen(c.x[j * kCached + k], v);
          f(j, i, c.g[j * kCached + k], v);
        }
      }
  } else {
#pragma unroll
    for (int j = 0; j < kPlays; ++j)
      for (int i = L::aten_thread(t, j); i < nv; i += kRowThreads) {
        float g[kVec], v[kVec];
        Pack<TX, kVec> xv;
        read(i, g, xv);
        widen(xv, v);
        f(j, i, g, v);
      }
  }
}

// grad: float32 grad of the modulated output. Pass 1 writes grad * normed (for scale's
// grad) and sums LayerNorm backward's row terms over dy = grad * (1 + scale), per play;
// pass 2 writes x's grad (ATen's float32 value, then cast to x's dtype as autocast's
// ToCopyBackward does).
template <typename TX, int kCached, int kRowLanes>
__global__ void __launch_bounds__(kMaxThreads)
    modulate_ln_bwd_kernel(const float* __restrict__ grad, const TX* __restrict__ x,
                           const float* __restrict__ mean, const float* __restrict__ rstd,
                           const float* __restrict__ scale, TX* __restrict__ dx,
                           float* __restrict__ g_scale_elem, int64_t rows, int n, int64_t seq,
                           int64_t scale_stride) {
  constexpr int kPlays = lno::RowLayout<kRowLanes>::kPlays;
  __shared__ RowSlots<kRowLanes> slots;
  const RowSlot s = row_slot<kRowLanes>(rows);
  const int nv = s.valid ? n / kVec : 0;
  const int64_t off = (s.valid ? s.row : 0) * n;
  const float m = s.valid ? mean[s.row] : 0.0f;
  const float rs = s.valid ? rstd[s.row] : 0.0f;
  const float* sc = scale + (s.valid ? s.row / seq : 0) * scale_stride;
  auto read = [&](int i, float(&g)[kVec], Pack<TX, kVec>& v) {
    load_float<kVec>(grad + off, i * kVec, g);
    v = load<kVec>(x + off, i * kVec);
  };
  float sum1[kPlays], sum2[kPlays];
#pragma unroll
  for (int j = 0; j < kPlays; ++j) sum1[j] = sum2[j] = 0.0f;
  auto terms = [&](int j, int i, const float(&g)[kVec], const float(&v)[kVec]) {
    const auto scv = load<kVec>(sc, i * kVec);
    Pack<float, kVec> gs;
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      float dy;
      fm::modulate_backward(g[e], fm::layer_norm_normalize(v[e], m, rs), scv.v[e], dy, gs.v[e]);
      fm::layer_norm_grad_terms(dy, v[e], m, rs, sum1[j], sum2[j]);
    }
    store<kVec>(g_scale_elem + off, i * kVec, gs);
  };
  RowCache<TX, kCached, kPlays, true> c;
  each_vector<kRowLanes>(s.t, nv, c, /*read_first=*/true, read, terms);
  const float row_sum1 = lno::row_sum<kRowLanes>(sum1, slots.of(s.group), s.t);
  const float row_sum2 = lno::row_sum<kRowLanes>(sum2, slots.of(s.group), s.t);
  if (!s.valid) return;
  const float fn = static_cast<float>(n);
  const float term1 = fm::fmul(fm::fdiv(1.0f, fn), rs);
  auto emit = [&](int, int i, const float(&g)[kVec], const float(&v)[kVec]) {
    const auto scv = load<kVec>(sc, i * kVec);
    Pack<TX, kVec> r;
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      const float dy = fm::modulate_grad_normed(g[e], scv.v[e]);
      r.v[e] = fm::from_float<TX>(
          fm::layer_norm_grad_input(dy, v[e], m, rs, row_sum1, row_sum2, fn, term1));
    }
    store<kVec>(dx + off, i * kVec, r);
  };
  each_vector<kRowLanes>(s.t, nv, c, /*read_first=*/false, read, emit);
}

}  // namespace sg::kernels::cuda::modulate_ln
