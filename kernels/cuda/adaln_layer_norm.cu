// ADALN modulate with the LayerNorm inside: layer_norm(float(x)) * (1 + scale) + shift in
// one pass over x (forward) and LayerNorm backward + modulate backward in one pass over the
// grad (backward), with the row statistics and row sums computed in ATen's own order
// (layer_norm_order.cuh) so that mean, rstd, the output and x's grad are bitwise what
// at::layer_norm and its autograd backward produce. Applies where ATen itself takes its
// vectorised path (C % 4 == 0) on float32 rows: float32 x, or bf16 x under autocast (ATen
// normalises a float32 copy; the kernels widen bf16 as they load it, exactly).
// Each 128-thread group of a block handles one row; `threads / 128` rows per block. A row of
// up to 2048 elements stays in registers between the passes (one read of x, and of the grad).
#include "kernels/cuda/adaln_operands.hpp"
#include "kernels/cuda/fused_math.hpp"
#include "kernels/cuda/launchers.hpp"
#include "kernels/cuda/layer_norm_order.cuh"
#include "kernels/cuda/vector_access.cuh"

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include <cstdint>
#include <type_traits>

namespace sg::kernels::cuda {
namespace {

namespace fm = fused_math;
namespace lno = layer_norm_order;
using lno::kRowThreads;
using lno::kRowWarps;
using lno::kVec;

constexpr int kMaxRowsPerBlock = 4;

// The row this thread's 128-thread group handles, and the thread's index in the group.
struct RowSlot {
  int group, t;
  int64_t row;
  bool valid;
};
__device__ inline RowSlot row_slot(int64_t rows) {
  RowSlot s;
  s.group = threadIdx.x / kRowThreads;
  s.t = threadIdx.x % kRowThreads;
  s.row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / kRowThreads) + s.group;
  s.valid = s.row < rows;
  return s;
}

// The row's 4-element vector i, widened to float.
template <typename TX>
__device__ inline void widen4(const TX* __restrict__ row, int i, float (&v)[kVec]) {
  load_float<kVec>(row, i * kVec, v);
}

// A thread's vectors i = t + k * 128 of a row, k < kCached, held in registers between the
// passes (all loads issued before the first use); with kCached == 0 every pass reads them
// again (rows longer than 128 * kCached vectors).
constexpr int kCachedVectors = 4;
// 1 / n for the counts of a thread's pushes from registers (n = 4k + e + 1), correctly rounded
// (the compiler divides at compile time, as __fdiv_rn would at run time).
__constant__ float kReciprocal[kCachedVectors * kVec] = {
    1.0f / 1,  1.0f / 2,  1.0f / 3,  1.0f / 4,  1.0f / 5,  1.0f / 6,  1.0f / 7,  1.0f / 8,
    1.0f / 9,  1.0f / 10, 1.0f / 11, 1.0f / 12, 1.0f / 13, 1.0f / 14, 1.0f / 15, 1.0f / 16};

template <int kCached>
struct RowCache {
  float x[kCached > 0 ? kCached : 1][kVec];
  float g[kCached > 0 ? kCached : 1][kVec];
};

template <typename TX, int kCached>
__global__ void modulate_ln_fwd_kernel(const TX* __restrict__ x, const float* __restrict__ scale,
                                       const float* __restrict__ shift, float* __restrict__ out,
                                       float* __restrict__ mean_out, float* __restrict__ rstd_out, int64_t rows, int n,
                                       int64_t seq, int64_t scale_stride, int64_t shift_stride, float eps) {
  __shared__ float slots[kMaxRowsPerBlock][3 * kRowWarps];
  const RowSlot s = row_slot(rows);
  const int nv = s.valid ? n / kVec : 0;
  const TX* xr = x + (s.valid ? s.row : 0) * n;
  RowCache<kCached> c;
  fm::WelfordLN w{0.0f, 0.0f, 0.0f};
  if constexpr (kCached > 0) {
#pragma unroll
    for (int k = 0; k < kCached; ++k)
      if (s.t + k * kRowThreads < nv) widen4(xr, s.t + k * kRowThreads, c.x[k]);
    // A thread's valid vectors are k = 0 .. some K - 1, so its count before a push is 4k + e.
#pragma unroll
    for (int k = 0; k < kCached; ++k)
      if (s.t + k * kRowThreads < nv)
#pragma unroll
        for (int e = 0; e < kVec; ++e) w = fm::welford_push(w, c.x[k][e], kReciprocal[k * kVec + e]);
  } else {
    for (int i = s.t; i < nv; i += kRowThreads) {
      float v[kVec];
      widen4(xr, i, v);
#pragma unroll
      for (int e = 0; e < kVec; ++e) w = fm::welford_push(w, v[e]);
    }
  }
  const auto stats = lno::row_stats(w, n, slots[s.group], s.t);
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
      r.v[e] = fm::modulate_forward(fm::layer_norm_normalize(v[e], stats.mean, rstd), scv.v[e], shv.v[e]);
    store<kVec>(o, i * kVec, r);
  };
  if constexpr (kCached > 0) {
#pragma unroll
    for (int k = 0; k < kCached; ++k)
      if (s.t + k * kRowThreads < nv) emit(s.t + k * kRowThreads, c.x[k]);
  } else {
    for (int i = s.t; i < nv; i += kRowThreads) {
      float v[kVec];
      widen4(xr, i, v);
      emit(i, v);
    }
  }
  if (s.t == 0) {
    mean_out[s.row] = stats.mean;
    rstd_out[s.row] = rstd;
  }
}

// Calls f(i, g, x) for thread t's vectors i = t, t + 128, ... < nv of the row: from the
// registers in c (filled by read(i, g, x) first when read_first), or, with kCached == 0,
// reading each vector again.
template <int kCached, typename Read, typename F>
__device__ inline void each_vector(int t, int nv, RowCache<kCached>& c, bool read_first, Read&& read, F&& f) {
  if constexpr (kCached > 0) {
    if (read_first) {
#pragma unroll
      for (int k = 0; k < kCached; ++k)
        if (t + k * kRowThreads < nv) read(t + k * kRowThreads, c.g[k], c.x[k]);
    }
#pragma unroll
    for (int k = 0; k < kCached; ++k)
      if (t + k * kRowThreads < nv) f(t + k * kRowThreads, c.g[k], c.x[k]);
  } else {
    for (int i = t; i < nv; i += kRowThreads) {
      float g[kVec], v[kVec];
      read(i, g, v);
      f(i, g, v);
    }
  }
}

// grad: float32 grad of the modulated output. Pass 1 writes grad * normed (for scale's
// grad) and sums LayerNorm backward's row terms over dy = grad * (1 + scale); pass 2 writes
// x's grad (ATen's float32 value, then cast to x's dtype as autocast's ToCopyBackward does).
template <typename TX, int kCached>
__global__ void modulate_ln_bwd_kernel(const float* __restrict__ grad, const TX* __restrict__ x,
                                       const float* __restrict__ mean, const float* __restrict__ rstd,
                                       const float* __restrict__ scale, TX* __restrict__ dx,
                                       float* __restrict__ g_scale_elem, int64_t rows, int n, int64_t seq,
                                       int64_t scale_stride) {
  __shared__ float slots[kMaxRowsPerBlock][kRowWarps];
  __shared__ float sums[kMaxRowsPerBlock][2];
  const RowSlot s = row_slot(rows);
  const int nv = s.valid ? n / kVec : 0;
  const int64_t off = (s.valid ? s.row : 0) * n;
  const float m = s.valid ? mean[s.row] : 0.0f;
  const float rs = s.valid ? rstd[s.row] : 0.0f;
  const float* sc = scale + (s.valid ? s.row / seq : 0) * scale_stride;
  auto read = [&](int i, float(&g)[kVec], float(&v)[kVec]) {
    load_float<kVec>(grad + off, i * kVec, g);
    widen4(x + off, i, v);
  };
  float sum1 = 0.0f, sum2 = 0.0f;
  auto terms = [&](int i, const float(&g)[kVec], const float(&v)[kVec]) {
    const auto scv = load<kVec>(sc, i * kVec);
    Pack<float, kVec> gs;
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      float dy;
      fm::modulate_backward(g[e], fm::layer_norm_normalize(v[e], m, rs), scv.v[e], dy, gs.v[e]);
      fm::layer_norm_grad_terms(dy, v[e], m, rs, sum1, sum2);
    }
    store<kVec>(g_scale_elem + off, i * kVec, gs);
  };
  RowCache<kCached> c;
  each_vector(s.t, nv, c, /*read_first=*/true, read, terms);
  sum1 = lno::row_sum(sum1, slots[s.group], s.t);
  sum2 = lno::row_sum(sum2, slots[s.group], s.t);
  if (s.t == 0) {
    sums[s.group][0] = sum1;
    sums[s.group][1] = sum2;
  }
  __syncthreads();
  if (!s.valid) return;
  sum1 = sums[s.group][0];
  sum2 = sums[s.group][1];
  const float fn = static_cast<float>(n);
  const float term1 = fm::fmul(fm::fdiv(1.0f, fn), rs);
  auto emit = [&](int i, const float(&g)[kVec], const float(&v)[kVec]) {
    const auto scv = load<kVec>(sc, i * kVec);
    Pack<TX, kVec> r;
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      const float dy = fm::modulate_grad_normed(g[e], scv.v[e]);
      r.v[e] = fm::from_float<TX>(fm::layer_norm_grad_input(dy, v[e], m, rs, sum1, sum2, fn, term1));
    }
    store<kVec>(dx + off, i * kVec, r);
  };
  each_vector(s.t, nv, c, /*read_first=*/false, read, emit);
}

// Calls f(kCached constant): registers for rows of up to 128 * kCachedVectors vectors.
template <typename F>
void with_cache(int64_t channels, F&& f) {
  if (channels / kVec <= int64_t{kRowThreads} * kCachedVectors) {
    f(std::integral_constant<int, kCachedVectors>{});
  } else {
    f(std::integral_constant<int, 0>{});
  }
}

// Rows per block and the grid for `rows` rows.
dim3 row_grid(int64_t rows, int64_t threads) {
  TORCH_CHECK(threads > 0 && threads % kRowThreads == 0 && threads / kRowThreads <= kMaxRowsPerBlock,
              "adaln: layer-norm modulate needs threads in {128, 256, 512}");
  const int64_t per_block = threads / kRowThreads;
  const int64_t blocks = (rows + per_block - 1) / per_block;
  TORCH_CHECK(blocks < (int64_t{1} << 31), "adaln: too many rows");
  return dim3(static_cast<unsigned>(blocks));
}

// Launches a row kernel over x's rows: calls go(TX{}, cached, grid, block, stream) with x's
// element type and the register cache its rows fit (with_cache), then checks the launch.
template <typename Go>
void launch_rows(const at::Tensor& x, int64_t rows, int64_t threads, Go&& go) {
  const dim3 grid = row_grid(rows, threads);
  const dim3 block(static_cast<unsigned>(threads));
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  adaln::with_type(x.scalar_type(), [&](auto tx) {
    with_cache(x.size(2), [&](auto cached) {
      go(tx, cached, grid, block, stream);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    });
  });
}

}  // namespace

bool modulate_layer_norm_applies(const at::Tensor& x, const at::Tensor& scale, const at::Tensor& shift,
                                 bool to_float) {
  if (!x.is_cuda() || x.dim() != 3 || !x.is_contiguous() || x.numel() == 0) return false;
  if (!(x.scalar_type() == at::kFloat || (to_float && x.scalar_type() == at::kBFloat16))) return false;
  const int64_t c = x.size(2);
  // ATen's vectorised LayerNorm: C % 4 == 0, C <= 2^24, its input aligned to 4 elements (a
  // float32 copy under autocast is a new, aligned tensor; x itself must be aligned for the loads).
  if (c % kVec != 0 || c > (int64_t{1} << 24) || !aligned_to(x, kVec * x.element_size())) return false;
  for (const auto* m : {&scale, &shift}) {
    if (!adaln::is_mod_vector(*m, x) || !adaln::mod_vector_loads_by_4(*m)) return false;
  }
  return true;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> modulate_layer_norm_forward(const at::Tensor& x,
                                                                           const at::Tensor& scale,
                                                                           const at::Tensor& shift, double eps,
                                                                           int64_t threads) {
  adaln::check_rows(x, x);
  TORCH_CHECK(x.dim() == 3 && x.size(2) % kVec == 0 && aligned_to(x, kVec * x.element_size()),
              "adaln: layer-norm modulate needs [B, S, C] rows with C % 4 == 0, aligned");
  const c10::cuda::CUDAGuard guard(x.device());
  const int64_t ss = adaln::mod_stride(scale, x), hs = adaln::mod_stride(shift, x);
  const int64_t rows = x.size(0) * x.size(1);
  auto out = empty_output(x.sizes(), x.options().dtype(at::kFloat));
  auto mean = empty_output({x.size(0), x.size(1), 1}, x.options().dtype(at::kFloat));
  auto rstd = empty_output({x.size(0), x.size(1), 1}, x.options().dtype(at::kFloat));
  if (rows == 0) return {out, mean, rstd};
  launch_rows(x, rows, threads, [&](auto tx, auto cached, dim3 grid, dim3 block, cudaStream_t stream) {
    using TX = decltype(tx);
    modulate_ln_fwd_kernel<TX, decltype(cached)::value><<<grid, block, 0, stream>>>(
        x.data_ptr<TX>(), scale.data_ptr<float>(), shift.data_ptr<float>(), out.data_ptr<float>(),
        mean.data_ptr<float>(), rstd.data_ptr<float>(), rows, static_cast<int>(x.size(2)), x.size(1), ss, hs,
        static_cast<float>(eps));
  });
  return {out, mean, rstd};
}

std::pair<at::Tensor, at::Tensor> modulate_layer_norm_backward(const at::Tensor& grad, const at::Tensor& x,
                                                               const at::Tensor& mean, const at::Tensor& rstd,
                                                               const at::Tensor& scale, int64_t threads) {
  adaln::check_rows(x, x);
  adaln::check_rows(grad, x);
  TORCH_CHECK(grad.scalar_type() == at::kFloat && aligned_to(grad, 16), "adaln: modulate grad must be aligned float32");
  TORCH_CHECK(mean.is_contiguous() && rstd.is_contiguous() && mean.numel() == x.size(0) * x.size(1) &&
                  rstd.numel() == mean.numel() && mean.scalar_type() == at::kFloat &&
                  rstd.scalar_type() == at::kFloat,
              "adaln: mean and rstd must be float32 with one value per row");
  const c10::cuda::CUDAGuard guard(x.device());
  const int64_t ss = adaln::mod_stride(scale, x);
  const int64_t rows = x.size(0) * x.size(1);
  auto dx = empty_output(x.sizes(), x.options());
  auto g_scale_elem = empty_output(x.sizes(), x.options().dtype(at::kFloat));
  if (rows == 0) return {dx, g_scale_elem};
  launch_rows(x, rows, threads, [&](auto tx, auto cached, dim3 grid, dim3 block, cudaStream_t stream) {
    using TX = decltype(tx);
    modulate_ln_bwd_kernel<TX, decltype(cached)::value><<<grid, block, 0, stream>>>(
        grad.data_ptr<float>(), x.data_ptr<TX>(), mean.data_ptr<float>(), rstd.data_ptr<float>(),
        scale.data_ptr<float>(), dx.data_ptr<TX>(), g_scale_elem.data_ptr<float>(), rows, static_cast<int>(x.size(2)),
        x.size(1), ss);
  });
  return {dx, g_scale_elem};
}

}  // namespace sg::kernels::cuda
