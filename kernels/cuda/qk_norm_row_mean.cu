// QKNORM's row mean of squares, mean(float(x)^2, -1, keepdim), in the order of ATen's CUDA
// mean over the last dim of a float32 [R, C] tensor (LibTorch 2.x, Reduce.cuh's ReduceOp
// with MeanOps, vt0 = input_vec_size = 4): for R >= 16 rows and 128 <= C <= 8160, C % 4 ==
// 0, setReduceConfig picks blocks of 32 x 16 threads, one warp per row and no split across
// warps or blocks; lane l adds the 4-float vectors l, l + 32, ... into 4 accumulators (one
// per vector slot), folds them ((a0 + a1) + a2) + a3, the warp sums by shuffles down 16,
// 8, 4, 2, 1, and the result is multiplied by factor = float(R) / float(R * C). Reading x
// and squaring in registers gives the same float32 values ATen reads from the squares
// tensor, which the fused QKNORM then never materialises.
#include "kernels/cuda/fused_math.hpp"
#include "kernels/cuda/launchers.hpp"
#include "kernels/cuda/vector_access.cuh"

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include <cstdint>

namespace sg::kernels::cuda {
namespace {

namespace fm = fused_math;
constexpr int kWarp = 32;
constexpr int kVec = 4;

template <typename T>
__global__ void rms_row_mean_kernel(const T* __restrict__ x, float* __restrict__ mean, int64_t rows, int c,
                                    float factor) {
  const int lane = threadIdx.x % kWarp;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / kWarp) + threadIdx.x / kWarp;
  if (row >= rows) return;  // the whole warp: rows are per warp
  const T* xr = x + row * c;
  float acc[kVec] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int i = lane; i * kVec + kVec - 1 < c; i += kWarp) {
    const auto v = load<kVec>(xr, i * kVec);
#pragma unroll
    for (int e = 0; e < kVec; ++e) acc[e] = fm::fadd(acc[e], fm::rms_square(fm::to_float(v.v[e])));
  }
  float sum = fm::fadd(fm::fadd(fm::fadd(acc[0], acc[1]), acc[2]), acc[3]);
  for (int offset = kWarp / 2; offset > 0; offset >>= 1) sum = fm::fadd(sum, __shfl_down_sync(0xffffffffu, sum, offset));
  if (lane == 0) mean[row] = fm::fmul(sum, factor);
}

}  // namespace

bool rms_row_mean_applies(const at::Tensor& x) {
  if (!x.is_cuda() || x.dim() != 3 || !x.is_contiguous()) return false;
  if (x.scalar_type() != at::kFloat && x.scalar_type() != at::kBFloat16) return false;
  const int64_t rows = x.size(0) * x.size(1), c = x.size(2);
  return rows >= 16 && c >= 128 && c <= 8160 && c % kVec == 0 &&
         reinterpret_cast<uintptr_t>(x.data_ptr()) % (kVec * x.element_size()) == 0;
}

at::Tensor rms_row_mean(const at::Tensor& x, int64_t threads) {
  TORCH_CHECK(rms_row_mean_applies(x), "qk_norm: row mean needs contiguous aligned [B, S, C] rows, C % 4 == 0");
  TORCH_CHECK(threads % kWarp == 0 && threads > 0 && threads <= 1024, "qk_norm: bad threads");
  const c10::cuda::CUDAGuard guard(x.device());
  const int64_t rows = x.size(0) * x.size(1), c = x.size(2);
  auto mean = empty_output({x.size(0), x.size(1), 1}, x.options().dtype(at::kFloat));
  // ATen's MeanOps factor: float(num outputs) / numel, the int64 numel converted to float.
  const float factor = static_cast<float>(rows) / static_cast<float>(rows * c);
  const int64_t per_block = threads / kWarp;
  const int64_t blocks = (rows + per_block - 1) / per_block;
  TORCH_CHECK(blocks < (int64_t{1} << 31), "qk_norm: too many rows");
  auto stream = at::cuda::getCurrentCUDAStream();
  auto launch = [&](auto t) {
    using T = decltype(t);
    rms_row_mean_kernel<T><<<dim3(static_cast<unsigned>(blocks)), dim3(static_cast<unsigned>(threads)), 0, stream>>>(
        x.data_ptr<T>(), mean.data_ptr<float>(), rows, static_cast<int>(c), factor);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  };
  if (x.scalar_type() == at::kFloat) {
    launch(float{});
  } else {
    launch(c10::BFloat16{});
  }
  return mean;
}

}  // namespace sg::kernels::cuda
