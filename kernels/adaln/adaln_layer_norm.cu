// ADALN modulate with the LayerNorm inside: layer_norm(float(x)) * (1 + scale) + shift in
// one pass over x (forward) and LayerNorm backward + modulate backward in one pass over the
// grad (backward), with the row statistics and row sums computed in ATen's own order
// (layer_norm_order.cuh) so that mean, rstd, the output and x's grad are bitwise what
// at::layer_norm and its autograd backward produce. Applies where ATen itself takes its
// vectorised path (C % 4 == 0) on float32 rows: float32 x, or bf16 x under autocast (ATen
// normalises a float32 copy; the kernels widen bf16 as they load it, exactly).
// A group of `row_threads` threads (32, 64 or 128, playing ATen's 128 row threads) handles
// one row; `threads / row_threads` rows per block. A row of up to 2048 elements stays in
// registers between the passes (one read of x, and of the grad); longer rows are read twice.
// Device code: adaln_layer_norm_kernels.cuh.
#include "kernels/adaln/adaln_launchers.hpp"
#include "kernels/adaln/adaln_layer_norm_kernels.cuh"
#include "kernels/adaln/adaln_operands.hpp"
#include "kernels/common/cuda/with_constant.hpp"

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace sg::kernels::cuda {
namespace {

using namespace modulate_ln;

// Calls f(kCached constant): as many register slots as an ATen thread's share of the row
// needs (1 to kCachedVectors vectors: a slot a row never fills would still hold registers and
// cost occupancy; a thread playing P ATen threads holds P times as many), or 0 for longer rows.
template <typename F>
void with_cache(int64_t channels, F&& f) {
  const int64_t per_thread = (channels / kVec + kRowThreads - 1) / kRowThreads;
  if (!with_constant<1, 2, 3, 4>(std::max<int64_t>(per_thread, 1), f)) {
    f(std::integral_constant<int, 0>{});
  }
}

// The launch parameters, checked before anything else (also where there is nothing to launch).
void check_launch(int64_t threads, int64_t row_threads) {
  TORCH_CHECK(threads > 0 && threads % kRowThreads == 0 && threads <= kMaxThreads,
              "adaln: layer-norm modulate needs threads in {128, 256, 512}, got ", threads);
  TORCH_CHECK(row_threads == 32 || row_threads == 64 || row_threads == 128,
              "adaln: layer-norm modulate needs row_threads in {32, 64, 128}, got ", row_threads);
}

// Calls f(kRowLanes constant) for the row group size `row_threads` (32, 64 or 128 threads
// playing ATen's 128 row threads: layer_norm_order.cuh), which check_launch has checked.
template <typename F>
void with_row_lanes(int64_t row_threads, F&& f) {
  const bool launched = with_constant<32, 64, 128>(row_threads, f);
  TORCH_INTERNAL_ASSERT(launched, "adaln: row_threads ", row_threads, " passed check_launch");
}

// Launches a row kernel over x's rows, one per `row_threads` threads: calls go(TX{}, cached,
// lanes, grid, block, stream) with x's element type, the register cache its rows fit
// (with_cache) and the row group size, then checks the launch.
template <typename Go>
void launch_rows(const at::Tensor& x, int64_t rows, int64_t threads, int64_t row_threads, Go&& go) {
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  with_row_lanes(row_threads, [&](auto lanes) {
    const int64_t per_block = threads / decltype(lanes)::value;
    const int64_t blocks = (rows + per_block - 1) / per_block;
    TORCH_CHECK(blocks < (int64_t{1} << 31), "adaln: too many rows");
    const dim3 grid(static_cast<unsigned>(blocks));
    const dim3 block(static_cast<unsigned>(threads));
    adaln::with_type(x.scalar_type(), [&](auto tx) {
      with_cache(x.size(2), [&](auto cached) {
        go(tx, cached, lanes, grid, block, stream);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
      });
    });
  });
}

}  // namespace

bool modulate_layer_norm_applies(const at::Tensor& x, const at::Tensor& scale,
                                 const at::Tensor& shift, bool to_float) {
  if (!x.is_cuda() || x.dim() != 3 || !x.is_contiguous() || x.numel() == 0) return false;
  if (!(x.scalar_type() == at::kFloat || (to_float && x.scalar_type() == at::kBFloat16)))
    return false;
  const int64_t c = x.size(2);
  // ATen's vectorised LayerNorm: C % 4 == 0, C <= 2^24, its input aligned to 4 elements (a
  // float32 copy under autocast is a new, aligned tensor; x itself must be aligned for the loads).
  if (c % kVec != 0 || c > (int64_t{1} << 24) || !aligned_to(x, kVec * x.element_size()))
    return false;
  for (const auto* m : {&scale, &shift}) {
    if (!adaln::is_mod_vector(*m, x) || !adaln::mod_vector_loads_by_4(*m)) return false;
  }
  return true;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> modulate_layer_norm_forward(
    const at::Tensor& x, const at::Tensor& scale, const at::Tensor& shift, double eps,
    int64_t threads, int64_t row_threads) {
  check_launch(threads, row_threads);
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
  launch_rows(x, rows, threads, row_threads,
              [&](auto tx, auto cached, auto lanes, dim3 grid, dim3 block, cudaStream_t stream) {
                using TX = decltype(tx);
                constexpr int kCached = decltype(cached)::value, kLanes = decltype(lanes)::value;
                auto go = [&](auto equal) {
                  modulate_ln_fwd_kernel<TX, kCached, decltype(equal)::value, kLanes>
                      <<<grid, block, 0, stream>>>(
                          x.data_ptr<TX>(), scale.data_ptr<float>(), shift.data_ptr<float>(),
                          out.data_ptr<float>(), mean.data_ptr<float>(), rstd.data_ptr<float>(),
                          rows, static_cast<int>(x.size(2)), x.size(1), ss, hs,
                          static_cast<float>(eps),
                          decltype(equal)::value ? equal_weights(kCached) : EqualWeights{});
                };
                // Every ATen thread's kCached slots filled: C == 4 * 128 * kCached (C = 512, 1024,
                // 1536, 2048).
                if constexpr (kCached > 0) {
                  if (x.size(2) == int64_t{kVec} * kRowThreads * kCached) {
                    go(std::true_type{});
                    return;
                  }
                }
                go(std::false_type{});
              });
  return {out, mean, rstd};
}

std::pair<at::Tensor, at::Tensor> modulate_layer_norm_backward(
    const at::Tensor& grad, const at::Tensor& x, const at::Tensor& mean, const at::Tensor& rstd,
    const at::Tensor& scale, int64_t threads, int64_t row_threads) {
  check_launch(threads, row_threads);
  adaln::check_rows(x, x);
  adaln::check_rows(grad, x);
  TORCH_CHECK(grad.scalar_type() == at::kFloat && aligned_to(grad, 16),
              "adaln: modulate grad must be aligned float32");
  TORCH_CHECK(mean.is_contiguous() && rstd.is_contiguous() &&
                  mean.numel() == x.size(0) * x.size(1) && rstd.numel() == mean.numel() &&
                  mean.scalar_type() == at::kFloat && rstd.scalar_type() == at::kFloat,
              "adaln: mean and rstd must be float32 with one value per row");
  const c10::cuda::CUDAGuard guard(x.device());
  const int64_t ss = adaln::mod_stride(scale, x);
  const int64_t rows = x.size(0) * x.size(1);
  auto dx = empty_output(x.sizes(), x.options());
  auto g_scale_elem = empty_output(x.sizes(), x.options().dtype(at::kFloat));
  if (rows == 0) return {dx, g_scale_elem};
  launch_rows(x, rows, threads, row_threads,
              [&](auto tx, auto cached, auto lanes, dim3 grid, dim3 block, cudaStream_t stream) {
                using TX = decltype(tx);
                modulate_ln_bwd_kernel<TX, decltype(cached)::value, decltype(lanes)::value>
                    <<<grid, block, 0, stream>>>(grad.data_ptr<float>(), x.data_ptr<TX>(),
                                                 mean.data_ptr<float>(), rstd.data_ptr<float>(),
                                                 scale.data_ptr<float>(), dx.data_ptr<TX>(),
                                                 g_scale_elem.data_ptr<float>(), rows,
                                                 static_cast<int>(x.size(2)), x.size(1), ss);
              });
  return {dx, g_scale_elem};
}

}  // namespace sg::kernels::cuda
