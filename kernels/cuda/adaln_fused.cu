// Fused AdaLN chains, forward and backward, one pass each over [B, S, C] rows: the
// modulation normed * (1 + scale) + shift and the gated residual x + y * gate. Each
// thread handles `vec` elements strided by the block size (coalesced); the per-batch
// [1, C] modulation vectors are read through the cache. Per-element math and rounding
// are those of the reference ops (fused_math.hpp); reductions stay in ATen (adaln_fused.cpp).
#include "kernels/cuda/fused_math.hpp"
#include "kernels/cuda/launchers.hpp"

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <cstdint>

namespace sg::kernels::cuda {
namespace {

namespace fm = fused_math;

// Where the [Bm, 1, C] modulation row of element i lives. I: the index type, 32-bit
// when every index fits (integer division dominates these kernels' instruction count).
template <typename I>
struct ModIndex {
  I channels;
  I seq;
  __device__ I operator()(I i, I batch_stride) const { return (i / channels / seq) * batch_stride + i % channels; }
};

struct Launch {
  int64_t n;
  dim3 grid, block;
};

Launch plan(int64_t n, int64_t threads, int64_t vec) {
  TORCH_CHECK(threads > 0 && threads <= 1024 && (vec == 1 || vec == 2 || vec == 4), "adaln: bad params");
  const int64_t blocks = (n + threads * vec - 1) / (threads * vec);
  TORCH_CHECK(blocks < (int64_t{1} << 31), "adaln: too many blocks");
  return {n, dim3(static_cast<unsigned>(blocks)), dim3(static_cast<unsigned>(threads))};
}

#define SG_ADALN_ELEMENTS(kVec)                                                         \
  const I base = static_cast<I>(blockIdx.x) * blockDim.x * kVec + threadIdx.x;             \
  _Pragma("unroll") for (int k = 0; k < kVec; ++k)                                      \
    if (const I i = base + static_cast<I>(k) * blockDim.x; i < n)

template <typename TN, int kVec, typename I>
__global__ void modulate_fwd_kernel(const TN* __restrict__ normed, const float* __restrict__ scale,
                                    const float* __restrict__ shift, float* __restrict__ out, I n,
                                    ModIndex<I> mi, I scale_stride, I shift_stride) {
  SG_ADALN_ELEMENTS(kVec) {
    out[i] = fm::modulate_forward(fm::to_float(normed[i]), __ldg(&scale[mi(i, scale_stride)]),
                                  __ldg(&shift[mi(i, shift_stride)]));
  }
}

template <typename TN, int kVec, typename I>
__global__ void modulate_bwd_kernel(const float* __restrict__ grad, const TN* __restrict__ normed,
                                    const float* __restrict__ scale, TN* __restrict__ g_normed,
                                    float* __restrict__ g_scale_elem, I n, ModIndex<I> mi, I scale_stride) {
  SG_ADALN_ELEMENTS(kVec) {
    float gn, gs;
    fm::modulate_backward(grad[i], fm::to_float(normed[i]), __ldg(&scale[mi(i, scale_stride)]), gn, gs);
    g_normed[i] = fm::from_float<TN>(gn);
    g_scale_elem[i] = gs;
  }
}

template <typename TX, typename TY, int kVec, typename I>
__global__ void gated_fwd_kernel(const TX* __restrict__ x, const TY* __restrict__ y, const float* __restrict__ gate,
                                 float* __restrict__ out, I n, ModIndex<I> mi, I gate_stride) {
  SG_ADALN_ELEMENTS(kVec) {
    out[i] = fm::gated_forward(fm::to_float(x[i]), fm::to_float(y[i]), __ldg(&gate[mi(i, gate_stride)]));
  }
}

// g_x is written only when x is not float32 (otherwise the grad itself is x's grad).
template <typename TX, typename TY, int kVec, typename I>
__global__ void gated_bwd_kernel(const float* __restrict__ grad, const TY* __restrict__ y,
                                 const float* __restrict__ gate, TX* __restrict__ g_x, TY* __restrict__ g_y,
                                 float* __restrict__ g_gate_elem, I n, ModIndex<I> mi, I gate_stride) {
  SG_ADALN_ELEMENTS(kVec) {
    const float g = grad[i];
    float gy, gg;
    fm::gated_backward(g, fm::to_float(y[i]), __ldg(&gate[mi(i, gate_stride)]), gy, gg);
    if (g_x != nullptr) g_x[i] = fm::from_float<TX>(g);
    g_y[i] = fm::from_float<TY>(gy);
    g_gate_elem[i] = gg;
  }
}

#undef SG_ADALN_ELEMENTS

// Calls f(vec constant) for vec in {1, 2, 4}.
template <typename F>
void with_vec(int64_t vec, F&& f) {
  switch (vec) {
    case 1: f(std::integral_constant<int, 1>{}); break;
    case 2: f(std::integral_constant<int, 2>{}); break;
    default: f(std::integral_constant<int, 4>{}); break;
  }
}

// Calls f(T{}) for T the C++ type of a float32 or bf16 tensor.
template <typename F>
void with_type(at::ScalarType t, F&& f) {
  if (t == at::kFloat) {
    f(float{});
  } else {
    TORCH_CHECK(t == at::kBFloat16, "adaln: rows must be float32 or bfloat16");
    f(c10::BFloat16{});
  }
}

void check_rows(const at::Tensor& t, const at::Tensor& like) {
  TORCH_CHECK(t.is_cuda() && t.device() == like.device() && t.is_contiguous() && t.sizes() == like.sizes(),
              "adaln: row operand must be a contiguous tensor shaped like x on x's device");
}

// Batch stride of a [Bm, 1, C] float32 modulation vector (0 when broadcast over batch).
int64_t mod_stride(const at::Tensor& m, const at::Tensor& rows) {
  TORCH_CHECK(m.is_cuda() && m.device() == rows.device() && m.scalar_type() == at::kFloat && m.dim() == 3 &&
                  m.size(1) == 1 && m.size(2) == rows.size(2) && (m.size(0) == 1 || m.size(0) == rows.size(0)) &&
                  (m.stride(2) == 1 || m.size(2) == 1),
              "adaln: modulation must be float32 [1 or B, 1, C] with unit stride along C");
  return m.size(0) == 1 ? 0 : m.stride(0);
}

struct Dims {
  int64_t channels, seq;
};

Dims mod_index(const at::Tensor& rows) {
  TORCH_CHECK(rows.dim() == 3, "adaln: rows must be [B, S, C]");
  return {rows.size(2), rows.size(1)};
}

// Bound of the indexes into a modulation vector: (Bm - 1) * stride + C.
int64_t span(const at::Tensor& m) { return m.size(0) * m.stride(0) + m.size(2); }

// Calls f(I{}) with I = uint32_t when every index of the launch (elements up to
// grid * block * 4, modulation indexes up to mod_span) fits, else int64_t.
template <typename F>
void with_index(const Launch& l, int64_t mod_span, F&& f) {
  const int64_t bound = std::max(static_cast<int64_t>(l.grid.x) * l.block.x * 4, mod_span);
  if (bound < (int64_t{1} << 32)) {
    f(uint32_t{});
  } else {
    f(int64_t{});
  }
}

}  // namespace

at::Tensor modulate_forward(const at::Tensor& normed, const at::Tensor& scale, const at::Tensor& shift,
                            int64_t threads, int64_t vec) {
  check_rows(normed, normed);
  const c10::cuda::CUDAGuard guard(normed.device());
  const Dims mi = mod_index(normed);
  const int64_t ss = mod_stride(scale, normed), hs = mod_stride(shift, normed);
  auto out = empty_output(normed.sizes(), normed.options().dtype(at::kFloat));
  if (normed.numel() == 0) return out;
  const Launch l = plan(normed.numel(), threads, vec);
  auto stream = at::cuda::getCurrentCUDAStream();
  with_type(normed.scalar_type(), [&](auto tn) {
    using TN = decltype(tn);
    with_vec(vec, [&](auto v) {
      with_index(l, std::max(span(scale), span(shift)), [&](auto index) {
        using I = decltype(index);
        modulate_fwd_kernel<TN, decltype(v)::value, I><<<l.grid, l.block, 0, stream>>>(
            normed.data_ptr<TN>(), scale.data_ptr<float>(), shift.data_ptr<float>(), out.data_ptr<float>(), I(l.n),
            ModIndex<I>{I(mi.channels), I(mi.seq)}, I(ss), I(hs));
        C10_CUDA_KERNEL_LAUNCH_CHECK();
      });
    });
  });
  return out;
}

std::pair<at::Tensor, at::Tensor> modulate_backward(const at::Tensor& grad, const at::Tensor& normed,
                                                    const at::Tensor& scale, int64_t threads, int64_t vec) {
  check_rows(normed, normed);
  check_rows(grad, normed);
  TORCH_CHECK(grad.scalar_type() == at::kFloat, "adaln: modulate grad must be float32");
  const c10::cuda::CUDAGuard guard(normed.device());
  const Dims mi = mod_index(normed);
  const int64_t ss = mod_stride(scale, normed);
  auto g_normed = empty_output(normed.sizes(), normed.options());
  auto g_scale_elem = empty_output(normed.sizes(), normed.options().dtype(at::kFloat));
  if (normed.numel() == 0) return {g_normed, g_scale_elem};
  const Launch l = plan(normed.numel(), threads, vec);
  auto stream = at::cuda::getCurrentCUDAStream();
  with_type(normed.scalar_type(), [&](auto tn) {
    using TN = decltype(tn);
    with_vec(vec, [&](auto v) {
      with_index(l, span(scale), [&](auto index) {
        using I = decltype(index);
        modulate_bwd_kernel<TN, decltype(v)::value, I><<<l.grid, l.block, 0, stream>>>(
            grad.data_ptr<float>(), normed.data_ptr<TN>(), scale.data_ptr<float>(), g_normed.data_ptr<TN>(),
            g_scale_elem.data_ptr<float>(), I(l.n), ModIndex<I>{I(mi.channels), I(mi.seq)}, I(ss));
        C10_CUDA_KERNEL_LAUNCH_CHECK();
      });
    });
  });
  return {g_normed, g_scale_elem};
}

at::Tensor gated_forward(const at::Tensor& x, const at::Tensor& y, const at::Tensor& gate, int64_t threads,
                         int64_t vec) {
  check_rows(x, x);
  check_rows(y, x);
  const c10::cuda::CUDAGuard guard(x.device());
  const Dims mi = mod_index(x);
  const int64_t gs = mod_stride(gate, x);
  auto out = empty_output(x.sizes(), x.options().dtype(at::kFloat));
  if (x.numel() == 0) return out;
  const Launch l = plan(x.numel(), threads, vec);
  auto stream = at::cuda::getCurrentCUDAStream();
  with_type(x.scalar_type(), [&](auto tx) {
    using TX = decltype(tx);
    with_type(y.scalar_type(), [&](auto ty) {
      using TY = decltype(ty);
      with_vec(vec, [&](auto v) {
        with_index(l, span(gate), [&](auto index) {
          using I = decltype(index);
          gated_fwd_kernel<TX, TY, decltype(v)::value, I><<<l.grid, l.block, 0, stream>>>(
              x.data_ptr<TX>(), y.data_ptr<TY>(), gate.data_ptr<float>(), out.data_ptr<float>(), I(l.n),
              ModIndex<I>{I(mi.channels), I(mi.seq)}, I(gs));
          C10_CUDA_KERNEL_LAUNCH_CHECK();
        });
      });
    });
  });
  return out;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> gated_backward(const at::Tensor& grad, at::ScalarType x_dtype,
                                                              const at::Tensor& y, const at::Tensor& gate,
                                                              int64_t threads, int64_t vec) {
  check_rows(grad, y);
  check_rows(y, y);
  TORCH_CHECK(grad.scalar_type() == at::kFloat, "adaln: gated grad must be float32");
  const c10::cuda::CUDAGuard guard(y.device());
  const Dims mi = mod_index(y);
  const int64_t gs = mod_stride(gate, y);
  const bool cast_x = x_dtype != at::kFloat;
  auto g_x = cast_x ? empty_output(y.sizes(), y.options().dtype(x_dtype)) : grad;
  auto g_y = empty_output(y.sizes(), y.options());
  auto g_gate_elem = empty_output(y.sizes(), y.options().dtype(at::kFloat));
  if (y.numel() == 0) return {g_x, g_y, g_gate_elem};
  const Launch l = plan(y.numel(), threads, vec);
  auto stream = at::cuda::getCurrentCUDAStream();
  with_type(x_dtype, [&](auto tx) {
    using TX = decltype(tx);
    with_type(y.scalar_type(), [&](auto ty) {
      using TY = decltype(ty);
      with_vec(vec, [&](auto v) {
        with_index(l, span(gate), [&](auto index) {
          using I = decltype(index);
          gated_bwd_kernel<TX, TY, decltype(v)::value, I><<<l.grid, l.block, 0, stream>>>(
              grad.data_ptr<float>(), y.data_ptr<TY>(), gate.data_ptr<float>(), cast_x ? g_x.data_ptr<TX>() : nullptr,
              g_y.data_ptr<TY>(), g_gate_elem.data_ptr<float>(), I(l.n), ModIndex<I>{I(mi.channels), I(mi.seq)}, I(gs));
          C10_CUDA_KERNEL_LAUNCH_CHECK();
        });
      });
    });
  });
  return {g_x, g_y, g_gate_elem};
}

}  // namespace sg::kernels::cuda
