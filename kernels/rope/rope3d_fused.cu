// Fused 3-D RoPE, forward and backward: one pass over x (or its grad) per call, each
// thread rotating `vec` (x0, x1) pairs strided by the block size (coalesced), with the
// float64 products and rounding steps of rope3d_apply_reference (fused_math.hpp).
#include "kernels/common/cuda/fused_math.hpp"
#include "kernels/common/cuda/host_checks.hpp"
#include "kernels/common/cuda/with_constant.hpp"
#include "kernels/rope/rope_launchers.hpp"

#include <ATen/Dispatch.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include <cstdint>

namespace sg::kernels::cuda {
namespace {

template <typename T>
struct alignas(2 * sizeof(T)) Pair {
  T a;
  T b;
};

// Index arithmetic in IndexT: 32-bit when every pair index fits (integer division is
// the costliest instruction here, and 64-bit division is several times dearer).
template <typename T, int kVec, bool kBackward, typename IndexT>
__global__ void rope3d_kernel(const T* __restrict__ in, const double2* __restrict__ table,
                              T* __restrict__ out, IndexT pairs, IndexT half_d, IndexT per_token,
                              IndexT seq) {
  const auto* src = reinterpret_cast<const Pair<T>*>(in);
  auto* dst = reinterpret_cast<Pair<T>*>(out);
  const IndexT base = static_cast<IndexT>(blockIdx.x) * blockDim.x * kVec + threadIdx.x;
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    const IndexT p = base + static_cast<IndexT>(k) * blockDim.x;
    if (p < pairs) {
      const IndexT j = p % half_d;
      const IndexT s = (p / per_token) % seq;
      const double2 cs = __ldg(&table[s * half_d + j]);
      const Pair<T> v = src[p];
      double r0, r1;
      if constexpr (kBackward) {
        fused_math::rope_backward(fused_math::to_double(v.a), fused_math::to_double(v.b), cs.x,
                                  cs.y, r0, r1);
      } else {
        fused_math::rope_forward(fused_math::to_double(v.a), fused_math::to_double(v.b), cs.x, cs.y,
                                 r0, r1);
      }
      Pair<T> r;
      r.a = fused_math::from_double<T>(r0);
      r.b = fused_math::from_double<T>(r1);
      dst[p] = r;
    }
  }
}

template <bool kBackward>
at::Tensor rope3d_launch(const at::Tensor& in, const at::Tensor& table, int64_t threads,
                         int64_t vec) {
  TORCH_CHECK(in.is_cuda() && in.dim() == 4 && in.is_contiguous() && in.size(3) % 2 == 0,
              "rope3d: bad x");
  TORCH_CHECK(table.is_cuda() && table.scalar_type() == at::kDouble && table.is_contiguous() &&
                  table.dim() == 3 && table.size(0) == in.size(1) &&
                  table.size(1) == in.size(3) / 2,
              "rope3d: bad table");
  TORCH_CHECK(aligned_to(in, 2 * in.element_size()) && aligned_to(table, 16),
              "rope3d: misaligned operands");
  TORCH_CHECK(threads > 0 && threads <= 1024 && (vec == 1 || vec == 2 || vec == 4),
              "rope3d: bad params");
  const c10::cuda::CUDAGuard guard(in.device());
  auto out = empty_output(in.sizes(), in.options());
  const int64_t pairs = in.numel() / 2;
  if (pairs == 0) return out;
  const int64_t per_block = threads * vec;
  const int64_t blocks = (pairs + per_block - 1) / per_block;
  TORCH_CHECK(blocks < (int64_t{1} << 31), "rope3d: too many blocks");
  auto stream = at::cuda::getCurrentCUDAStream();
  const auto* tab = reinterpret_cast<const double2*>(table.data_ptr<double>());
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, in.scalar_type(), "rope3d_fused", [&] {
    const auto* src = in.data_ptr<scalar_t>();
    auto* dst = out.data_ptr<scalar_t>();
    const dim3 grid(static_cast<unsigned>(blocks)), block(static_cast<unsigned>(threads));
    const int64_t half_d = in.size(3) / 2, per_token = in.size(2) * half_d, seq = in.size(1);
    auto launch = [&](auto index) {
      using I = decltype(index);
      const I n = static_cast<I>(pairs), h = static_cast<I>(half_d), t = static_cast<I>(per_token);
      const I sq = static_cast<I>(seq);
      with_vec(vec, [&](auto v) {
        rope3d_kernel<scalar_t, decltype(v)::value, kBackward, I>
            <<<grid, block, 0, stream>>>(src, tab, dst, n, h, t, sq);
      });
    };
    // Every index the kernel forms is below blocks * per_block (< pairs + per_block).
    if (blocks * per_block < (int64_t{1} << 32)) {
      launch(uint32_t{0});
    } else {
      launch(int64_t{0});
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return out;
}

}  // namespace

at::Tensor rope3d_forward(const at::Tensor& x, const at::Tensor& table, int64_t threads,
                          int64_t vec) {
  return rope3d_launch<false>(x, table, threads, vec);
}

at::Tensor rope3d_backward(const at::Tensor& grad, const at::Tensor& table, int64_t threads,
                           int64_t vec) {
  return rope3d_launch<true>(grad, table, threads, vec);
}

}  // namespace sg::kernels::cuda
