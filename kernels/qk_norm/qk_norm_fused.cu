// Fused q/k RMSNorm passes (and RMSNorm + 3-D RoPE for the video q/k): the elementwise
// parts of rms_norm_reference around ATen's own row reductions, which stay ATen's
// (qk_norm_fused_variant.cpp) so the sums keep their order. Four passes over
// [B, S, C] rows: the squares, the normalization (+ rotation), and in backward the two
// reduction operands, then x's grad. Each thread handles `vec` units (elements, or
// (x0, x1) pairs when rotating) strided by the block size. Per-element math and
// rounding: fused_math.hpp.
#include "kernels/common/cuda/fused_math.hpp"
#include "kernels/common/cuda/with_constant.hpp"
#include "kernels/qk_norm/qk_norm_launchers.hpp"
#include "kernels/qk_norm/qk_norm_operands.hpp"

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include <cstdint>

namespace sg::kernels::cuda {
namespace {

namespace fm = fused_math;

enum class Pass { kSquare, kNormalize, kProducts, kGradInput };

template <typename I>
struct Geometry {
  I units;      // elements, or pairs when rotating
  I channels;   // C
  I half_head;  // hd / 2 (rotation only)
  I seq;        // S (rotation only)
};

struct Pointers {
  const void* x = nullptr;
  const float* r = nullptr;
  const float* w = nullptr;
  const double2* table = nullptr;
  const float* g = nullptr;
  const float* g_mean = nullptr;
  float* out0 = nullptr;
  float* out1 = nullptr;
  void* out_x = nullptr;  // x's grad, in x's dtype
};

template <typename T, Pass kPass, bool kRope, int kVec, typename I>
__global__ void rms_kernel(Pointers p, Geometry<I> geo) {
  constexpr int kPer = kRope ? 2 : 1;
  const T* __restrict__ x = static_cast<const T*>(p.x);
  const I base = static_cast<I>(blockIdx.x) * blockDim.x * kVec + threadIdx.x;
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    const I u = base + static_cast<I>(k) * blockDim.x;
    if (u >= geo.units) break;
    const I e = u * kPer;
    float xf[kPer];
#pragma unroll
    for (int i = 0; i < kPer; ++i) xf[i] = fm::to_float(x[e + i]);
    if constexpr (kPass == Pass::kSquare) {
#pragma unroll
      for (int i = 0; i < kPer; ++i) p.out0[e + i] = fm::rms_square(xf[i]);
    } else {
      const I row = e / geo.channels, c = e % geo.channels;
      const float r = p.r[row];
      float w[kPer];
#pragma unroll
      for (int i = 0; i < kPer; ++i) w[i] = __ldg(&p.w[c + i]);
      double2 cs{};
      if constexpr (kRope)
        cs = __ldg(&p.table[(row % geo.seq) * geo.half_head + (c / 2) % geo.half_head]);
      if constexpr (kPass == Pass::kNormalize) {
        float o[kPer];
#pragma unroll
        for (int i = 0; i < kPer; ++i) o[i] = fm::rms_normalize<T>(xf[i], r, w[i]);
        if constexpr (kRope) {
          double r0, r1;
          fm::rope_forward(fm::to_double(o[0]), fm::to_double(o[1]), cs.x, cs.y, r0, r1);
          o[0] = fm::from_double<float>(r0);
          o[1] = fm::from_double<float>(r1);
        }
#pragma unroll
        for (int i = 0; i < kPer; ++i) p.out0[e + i] = o[i];
      } else {
        float g[kPer];
#pragma unroll
        for (int i = 0; i < kPer; ++i) g[i] = p.g[e + i];
        if constexpr (kRope) {
          double r0, r1;
          fm::rope_backward(fm::to_double(g[0]), fm::to_double(g[1]), cs.x, cs.y, r0, r1);
          g[0] = fm::from_double<float>(r0);
          g[1] = fm::from_double<float>(r1);
        }
        if constexpr (kPass == Pass::kProducts) {
#pragma unroll
          for (int i = 0; i < kPer; ++i)
            fm::rms_backward_products<T>(g[i], xf[i], r, w[i], p.out0[e + i], p.out1[e + i]);
        } else {
          const float gm = p.g_mean[row];
          T* __restrict__ gx = static_cast<T*>(p.out_x);
#pragma unroll
          for (int i = 0; i < kPer; ++i)
            gx[e + i] = fm::rms_grad_input<T>(g[i], xf[i], r, w[i], gm);
        }
      }
    }
  }
}

void check_x(const at::Tensor& x) {
  TORCH_CHECK(x.is_cuda() && x.dim() == 3 && x.is_contiguous(),
              "qk_norm: x must be a contiguous CUDA [B, S, C]");
}

void check_float_like(const at::Tensor& t, at::IntArrayRef sizes, const at::Tensor& x,
                      const char* what) {
  TORCH_CHECK(t.is_cuda() && t.device() == x.device() && t.scalar_type() == at::kFloat &&
                  t.is_contiguous() && t.sizes() == sizes,
              "qk_norm: ", what,
              " must be a contiguous float32 tensor of the expected shape on x's device");
}

struct Plan {
  bool rope;
  int64_t units, half_head, seq;
  dim3 grid, block;
};

Plan plan(const at::Tensor& x, const at::Tensor& w, const at::Tensor& table, int64_t heads,
          int64_t threads, int64_t vec, bool needs_w) {
  check_x(x);
  if (needs_w) check_float_like(w, {x.size(2)}, x, "w");
  TORCH_CHECK(threads > 0 && threads <= 1024 && (vec == 1 || vec == 2 || vec == 4),
              "qk_norm: bad params");
  Plan p{table.defined(), x.numel(), 1, 1, {}, {}};
  if (p.rope) {
    p.half_head = qk_norm::check_rope_table(table, x, heads);
    p.units = x.numel() / 2;
    p.seq = x.size(1);
  }
  const int64_t blocks = (p.units + threads * vec - 1) / (threads * vec);
  TORCH_CHECK(blocks < (int64_t{1} << 31), "qk_norm: too many blocks");
  p.grid = dim3(static_cast<unsigned>(blocks));
  p.block = dim3(static_cast<unsigned>(threads));
  return p;
}

template <Pass kPass>
void launch(const Plan& pl, at::ScalarType x_dtype, int64_t channels, int64_t vec,
            const Pointers& ptrs) {
  if (pl.units == 0) return;
  auto stream = at::cuda::getCurrentCUDAStream();
  qk_norm::with_type(x_dtype, [&](auto tx) {
    using T = decltype(tx);
    auto go = [&](auto index, auto rope, auto v) {
      using I = decltype(index);
      const Geometry<I> geo{I(pl.units), I(channels), I(pl.half_head), I(pl.seq)};
      rms_kernel<T, kPass, decltype(rope)::value, decltype(v)::value, I>
          <<<pl.grid, pl.block, 0, stream>>>(ptrs, geo);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    };
    auto with_rope = [&](auto index) {
      auto go_rope = [&](auto rope) { with_vec(vec, [&](auto v) { go(index, rope, v); }); };
      if (pl.rope && kPass != Pass::kSquare) {
        go_rope(std::true_type{});
      } else {
        go_rope(std::false_type{});
      }
    };
    // Every element index the kernel forms is below grid * block * vec * 2.
    if (static_cast<int64_t>(pl.grid.x) * pl.block.x * 4 * 2 < (int64_t{1} << 32)) {
      with_rope(uint32_t{0});
    } else {
      with_rope(int64_t{0});
    }
  });
}

// The row operands of the normalize and backward passes: x, r [B, S, 1], w and, with RoPE,
// the table (r is checked here).
Pointers row_operands(const Plan& pl, const at::Tensor& x, const at::Tensor& r, const at::Tensor& w,
                      const at::Tensor& table) {
  check_float_like(r, {x.size(0), x.size(1), 1}, x, "r");
  Pointers ptrs;
  ptrs.x = x.data_ptr();
  ptrs.r = r.data_ptr<float>();
  ptrs.w = w.data_ptr<float>();
  if (pl.rope) ptrs.table = reinterpret_cast<const double2*>(table.data_ptr<double>());
  return ptrs;
}

// The backward passes' incoming gradient: float32, contiguous, x's element count.
const float* grad_operand(const at::Tensor& g, const at::Tensor& x) {
  TORCH_CHECK(g.is_cuda() && g.device() == x.device() && g.scalar_type() == at::kFloat &&
                  g.is_contiguous() && g.numel() == x.numel(),
              "qk_norm: grad must be a contiguous float32 tensor with x's elements");
  return g.data_ptr<float>();
}

}  // namespace

at::Tensor rms_square(const at::Tensor& x, int64_t threads, int64_t vec) {
  const c10::cuda::CUDAGuard guard(x.device());
  const Plan pl = plan(x, at::Tensor(), at::Tensor(), 1, threads, vec, /*needs_w=*/false);
  auto sq = empty_output(x.sizes(), x.options().dtype(at::kFloat));
  Pointers ptrs;
  ptrs.x = x.data_ptr();
  ptrs.out0 = sq.data_ptr<float>();
  launch<Pass::kSquare>(pl, x.scalar_type(), x.size(2), vec, ptrs);
  return sq;
}

at::Tensor rms_normalize(const at::Tensor& x, const at::Tensor& r, const at::Tensor& w,
                         const at::Tensor& table, int64_t heads, int64_t threads, int64_t vec) {
  const c10::cuda::CUDAGuard guard(x.device());
  const Plan pl = plan(x, w, table, heads, threads, vec, /*needs_w=*/true);
  Pointers ptrs = row_operands(pl, x, r, w, table);
  auto sizes = pl.rope ? std::vector<int64_t>{x.size(0), x.size(1), heads, x.size(2) / heads}
                       : x.sizes().vec();
  auto out = empty_output(sizes, x.options().dtype(at::kFloat));
  ptrs.out0 = out.data_ptr<float>();
  launch<Pass::kNormalize>(pl, x.scalar_type(), x.size(2), vec, ptrs);
  return out;
}

std::pair<at::Tensor, at::Tensor> rms_backward_products(const at::Tensor& g, const at::Tensor& x,
                                                        const at::Tensor& r, const at::Tensor& w,
                                                        const at::Tensor& table, int64_t heads,
                                                        int64_t threads, int64_t vec) {
  const c10::cuda::CUDAGuard guard(x.device());
  const Plan pl = plan(x, w, table, heads, threads, vec, /*needs_w=*/true);
  Pointers ptrs = row_operands(pl, x, r, w, table);
  ptrs.g = grad_operand(g, x);
  auto g_r_elem = empty_output(x.sizes(), x.options().dtype(at::kFloat));
  auto g_w_elem = empty_output(x.sizes(), x.options().dtype(at::kFloat));
  ptrs.out0 = g_r_elem.data_ptr<float>();
  ptrs.out1 = g_w_elem.data_ptr<float>();
  launch<Pass::kProducts>(pl, x.scalar_type(), x.size(2), vec, ptrs);
  return {g_r_elem, g_w_elem};
}

at::Tensor rms_grad_input(const at::Tensor& g, const at::Tensor& x, const at::Tensor& r,
                          const at::Tensor& w, const at::Tensor& g_mean, const at::Tensor& table,
                          int64_t heads, int64_t threads, int64_t vec) {
  const c10::cuda::CUDAGuard guard(x.device());
  const Plan pl = plan(x, w, table, heads, threads, vec, /*needs_w=*/true);
  Pointers ptrs = row_operands(pl, x, r, w, table);
  check_float_like(g_mean, {x.size(0), x.size(1), 1}, x, "g_mean");
  ptrs.g = grad_operand(g, x);
  auto gx = empty_output(x.sizes(), x.options());
  ptrs.g_mean = g_mean.data_ptr<float>();
  ptrs.out_x = gx.data_ptr();
  launch<Pass::kGradInput>(pl, x.scalar_type(), x.size(2), vec, ptrs);
  return gx;
}

}  // namespace sg::kernels::cuda
