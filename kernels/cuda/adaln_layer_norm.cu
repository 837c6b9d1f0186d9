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
#include "kernels/cuda/adaln_layer_norm_kernels.cuh"
#include "kernels/cuda/adaln_operands.hpp"
#include "kernels/cuda/launchers.hpp"

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include <cstdint>
#include <type_traits>

namespace sg::kernels::cuda {
namespace {

using namespace modulate_ln;

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
