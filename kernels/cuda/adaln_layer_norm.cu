// ADALN modulate with the LayerNorm inside: layer_norm(float(x)) * (1 + scale) + shift in
// one pass over x (forward) and LayerNorm backward + modulate backward in one pass over the
// grad (backward), with the row statistics and row sums computed in ATen's own order
// (layer_norm_order.cuh) so that mean, rstd, the output and x's grad are bitwise what
// at::layer_norm and its autograd backward produce. Applies where ATen itself takes its
// vectorised path (C % 4 == 0) on float32 rows: float32 x, or bf16 x under autocast (ATen
// normalises a float32 copy; the kernels widen bf16 as they load it, exactly).
// Each 128-thread group of a block handles `rows_per_group` consecutive rows (1, 2 or 4: the
// variant's vec), side by side; `threads / 128` groups per block. A row of up to 2048
// elements stays in registers between the passes (one read of x, and of the grad); longer
// rows are read twice, one per group.
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
__constant__ float kReciprocal[kCachedVectors * kVec] = {
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

// Calls f(kCached constant): as many register slots as a thread's share of the row needs
// (1 to kCachedVectors vectors: a slot a row never fills would still hold registers and cost
// occupancy), or 0 for longer rows.
template <typename F>
void with_cache(int64_t channels, F&& f) {
  const int64_t per_thread = (channels / kVec + kRowThreads - 1) / kRowThreads;
  if (per_thread <= 1) {
    f(std::integral_constant<int, 1>{});
  } else if (per_thread == 2) {
    f(std::integral_constant<int, 2>{});
  } else if (per_thread == 3) {
    f(std::integral_constant<int, 3>{});
  } else if (per_thread == 4) {
    f(std::integral_constant<int, 4>{});
  } else {
    f(std::integral_constant<int, 0>{});
  }
}

// Calls f(kRows constant): the rows per 128-thread group for rows held in registers; rows
// read twice (kCached == 0, longer than 2048 elements) go one per group, their loads alone
// keep a group busy.
template <int kCached, typename F>
void with_rows_per_group(int64_t rows_per_group, F&& f) {
  if constexpr (kCached == 0) {
    f(std::integral_constant<int, 1>{});
  } else if (rows_per_group == 4) {
    f(std::integral_constant<int, 4>{});
  } else if (rows_per_group == 2) {
    f(std::integral_constant<int, 2>{});
  } else {
    f(std::integral_constant<int, 1>{});
  }
}

// The grid for `rows` rows, `per_block` per block.
dim3 row_grid(int64_t rows, int64_t per_block) {
  const int64_t blocks = (rows + per_block - 1) / per_block;
  TORCH_CHECK(blocks < (int64_t{1} << 31), "adaln: too many rows");
  return dim3(static_cast<unsigned>(blocks));
}

// Launches a row kernel over x's rows: calls go(TX{}, cached, rows_per_group, grid, block,
// stream) with x's element type, the register cache its rows fit (with_cache) and the rows
// per 128-thread group (with_rows_per_group), then checks the launch.
template <typename Go>
void launch_rows(const at::Tensor& x, int64_t rows, int64_t threads, int64_t rows_per_group, Go&& go) {
  TORCH_CHECK(threads > 0 && threads % kRowThreads == 0 && threads <= kMaxThreads,
              "adaln: layer-norm modulate needs threads in {128, 256, 512}");
  TORCH_CHECK(rows_per_group == 1 || rows_per_group == 2 || rows_per_group == 4,
              "adaln: layer-norm modulate takes 1, 2 or 4 rows per 128 threads");
  const dim3 block(static_cast<unsigned>(threads));
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  adaln::with_type(x.scalar_type(), [&](auto tx) {
    with_cache(x.size(2), [&](auto cached) {
      with_rows_per_group<decltype(cached)::value>(rows_per_group, [&](auto per_group) {
        go(tx, cached, per_group, row_grid(rows, threads / kRowThreads * decltype(per_group)::value), block, stream);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
      });
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
                                                                           int64_t threads, int64_t rows_per_group) {
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
  launch_rows(x, rows, threads, rows_per_group, [&](auto tx, auto cached, auto per_group, dim3 grid, dim3 block,
                                                    cudaStream_t stream) {
    using TX = decltype(tx);
    modulate_ln_fwd_kernel<TX, decltype(cached)::value, decltype(per_group)::value><<<grid, block, 0, stream>>>(
        x.data_ptr<TX>(), scale.data_ptr<float>(), shift.data_ptr<float>(), out.data_ptr<float>(),
        mean.data_ptr<float>(), rstd.data_ptr<float>(), rows, static_cast<int>(x.size(2)), x.size(1), ss, hs,
        static_cast<float>(eps));
  });
  return {out, mean, rstd};
}

std::pair<at::Tensor, at::Tensor> modulate_layer_norm_backward(const at::Tensor& grad, const at::Tensor& x,
                                                               const at::Tensor& mean, const at::Tensor& rstd,
                                                               const at::Tensor& scale, int64_t threads,
                                                               int64_t rows_per_group) {
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
  launch_rows(x, rows, threads, rows_per_group, [&](auto tx, auto cached, auto per_group, dim3 grid, dim3 block,
                                                    cudaStream_t stream) {
    using TX = decltype(tx);
    modulate_ln_bwd_kernel<TX, decltype(cached)::value, decltype(per_group)::value><<<grid, block, 0, stream>>>(
        grad.data_ptr<float>(), x.data_ptr<TX>(), mean.data_ptr<float>(), rstd.data_ptr<float>(),
        scale.data_ptr<float>(), dx.data_ptr<TX>(), g_scale_elem.data_ptr<float>(), rows, static_cast<int>(x.size(2)),
        x.size(1), ss);
  });
  return {dx, g_scale_elem};
}

}  // namespace sg::kernels::cuda
