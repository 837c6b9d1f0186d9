// Fused AdaLN chains, forward and backward, one pass each over [B, S, C] rows: the
// modulation normed * (1 + scale) + shift and the gated residual x + y * gate; and the
// linear layers' bias add y + bias (forward only: its backward is ATen's reduction). Each
// thread handles `vec` packs of `pack` consecutive elements (pack 4: one 16-byte float /
// 8-byte bf16 access per operand), packs strided by the block size (coalesced); the
// per-batch [1, C] modulation vectors are read through the cache. Per-element math and rounding
// are those of the reference ops (fused_math.hpp); reductions stay in ATen (adaln_fused.cpp).
#include "kernels/adaln/adaln_launchers.hpp"
#include "kernels/adaln/adaln_operands.hpp"
#include "kernels/common/cuda/fused_math.hpp"
#include "kernels/common/cuda/vector_access.cuh"
#include "kernels/common/cuda/with_constant.hpp"

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>

namespace sg::kernels::cuda {
namespace {

namespace fm = fused_math;
using adaln::check_rows;
using adaln::mod_stride;
using adaln::with_type;

// Where the [Bm, 1, C] modulation row of element i lives. I: the index type, 32-bit
// when every index fits (integer division dominates these kernels' instruction count).
template <typename I>
struct ModIndex {
  I channels;
  I seq;
  __device__ I operator()(I i, I batch_stride) const {
    return (i / channels / seq) * batch_stride + i % channels;
  }
};

struct Launch {
  int64_t n;
  dim3 grid, block;
};

// pack: consecutive elements per access (1, or 4 with vector loads, see pack_for).
Launch plan(int64_t n, int64_t threads, int64_t vec, int64_t pack) {
  TORCH_CHECK(threads > 0 && threads <= 1024 && (vec == 1 || vec == 2 || vec == 4) &&
                  (pack == 1 || pack == 4),
              "adaln: bad params");
  const int64_t per_block = threads * vec * pack;
  const int64_t blocks = (n + per_block - 1) / per_block;
  TORCH_CHECK(blocks < (int64_t{1} << 31), "adaln: too many blocks");
  return {n, dim3(static_cast<unsigned>(blocks)), dim3(static_cast<unsigned>(threads))};
}

// i: the first element of each of the thread's kVec packs (packs strided by the block
// size, so a warp's accesses are contiguous). With kPack > 1, n and C are multiples of
// kPack: a pack never straddles a row.
#define SG_ADALN_PACKS(kVec, kPack)                                                            \
  const I base = static_cast<I>(blockIdx.x) * blockDim.x * kVec + threadIdx.x;                 \
  _Pragma("unroll") for (int k = 0; k < kVec;                                                  \
                         ++k) if (const I i = (base + static_cast<I>(k) * blockDim.x) * kPack; \
                                  i < n)

template <typename TN, int kVec, int kPack, typename I>
__global__ void modulate_fwd_kernel(const TN* __restrict__ normed, const float* __restrict__ scale,
                                    const float* __restrict__ shift, float* __restrict__ out, I n,
                                    ModIndex<I> mi, I scale_stride, I shift_stride) {
  SG_ADALN_PACKS(kVec, kPack) {
    const auto x = load<kPack>(normed, i);
    const auto sc = load<kPack>(scale, mi(i, scale_stride));
    const auto sh = load<kPack>(shift, mi(i, shift_stride));
    Pack<float, kPack> o;
    for_each_element<kPack>(
        [&](int e) { o.v[e] = fm::modulate_forward(fm::to_float(x.v[e]), sc.v[e], sh.v[e]); });
    store<kPack>(out, i, o);
  }
}

template <typename TN, int kVec, int kPack, typename I>
__global__ void modulate_bwd_kernel(const float* __restrict__ grad, const TN* __restrict__ normed,
                                    const float* __restrict__ scale, TN* __restrict__ g_normed,
                                    float* __restrict__ g_scale_elem, I n, ModIndex<I> mi,
                                    I scale_stride) {
  SG_ADALN_PACKS(kVec, kPack) {
    const auto g = load<kPack>(grad, i);
    const auto x = load<kPack>(normed, i);
    const auto sc = load<kPack>(scale, mi(i, scale_stride));
    Pack<TN, kPack> gn;
    Pack<float, kPack> gs;
    for_each_element<kPack>([&](int e) {
      float gnf;
      fm::modulate_backward(g.v[e], fm::to_float(x.v[e]), sc.v[e], gnf, gs.v[e]);
      gn.v[e] = fm::from_float<TN>(gnf);
    });
    store<kPack>(g_normed, i, gn);
    store<kPack>(g_scale_elem, i, gs);
  }
}

template <typename TX, typename TY, int kVec, int kPack, typename I>
__global__ void gated_fwd_kernel(const TX* __restrict__ x, const TY* __restrict__ y,
                                 const float* __restrict__ gate, float* __restrict__ out, I n,
                                 ModIndex<I> mi, I gate_stride) {
  SG_ADALN_PACKS(kVec, kPack) {
    const auto xv = load<kPack>(x, i);
    const auto yv = load<kPack>(y, i);
    const auto gv = load<kPack>(gate, mi(i, gate_stride));
    Pack<float, kPack> o;
    for_each_element<kPack>([&](int e) {
      o.v[e] = fm::gated_forward(fm::to_float(xv.v[e]), fm::to_float(yv.v[e]), gv.v[e]);
    });
    store<kPack>(out, i, o);
  }
}

// y + bias, bias [C] indexed by the element's column (a pack stays in one row: C % kPack == 0).
template <typename T, int kVec, int kPack, typename I>
__global__ void bias_add_kernel(const T* __restrict__ y, const float* __restrict__ bias,
                                T* __restrict__ out, I n, I channels) {
  SG_ADALN_PACKS(kVec, kPack) {
    const auto yv = load<kPack>(y, i);
    const auto bv = load<kPack>(bias, i % channels);
    Pack<T, kPack> o;
    for_each_element<kPack>([&](int e) { o.v[e] = fm::bias_add(yv.v[e], bv.v[e]); });
    store<kPack>(out, i, o);
  }
}

// g_x is written only when x is not float32 (otherwise the grad itself is x's grad).
template <typename TX, typename TY, int kVec, int kPack, typename I>
__global__ void gated_bwd_kernel(const float* __restrict__ grad, const TY* __restrict__ y,
                                 const float* __restrict__ gate, TX* __restrict__ g_x,
                                 TY* __restrict__ g_y, float* __restrict__ g_gate_elem, I n,
                                 ModIndex<I> mi, I gate_stride) {
  SG_ADALN_PACKS(kVec, kPack) {
    const auto g = load<kPack>(grad, i);
    const auto yv = load<kPack>(y, i);
    const auto gv = load<kPack>(gate, mi(i, gate_stride));
    Pack<TX, kPack> gx;
    Pack<TY, kPack> gy;
    Pack<float, kPack> gg;
    for_each_element<kPack>([&](int e) {
      float gyf;
      fm::gated_backward(g.v[e], fm::to_float(yv.v[e]), gv.v[e], gyf, gg.v[e]);
      gx.v[e] = fm::from_float<TX>(g.v[e]);
      gy.v[e] = fm::from_float<TY>(gyf);
    });
    if (g_x != nullptr) store<kPack>(g_x, i, gx);
    store<kPack>(g_y, i, gy);
    store<kPack>(g_gate_elem, i, gg);
  }
}

#undef SG_ADALN_PACKS

// Calls f(TX{}, TY{}) for the element types of the gated chain's x and y.
template <typename F>
void with_types(at::ScalarType x, at::ScalarType y, F&& f) {
  with_type(x, [&](auto tx) { with_type(y, [&](auto ty) { f(tx, ty); }); });
}

// Calls f(pack constant) for pack in {1, 4}.
template <typename F>
void with_pack(int64_t pack, F&& f) {
  if (pack == 4) {
    f(std::integral_constant<int, 4>{});
  } else {
    f(std::integral_constant<int, 1>{});
  }
}

// The pack a launch uses: the requested 4 only when C is a multiple of 4 (a pack stays in
// one row), every row operand is aligned to 4 of its elements and every modulation
// vector to 16 bytes with a batch stride that is a multiple of 4; else 1 (same results).
int64_t effective_pack(int64_t requested, int64_t channels,
                       std::initializer_list<const at::Tensor*> rows,
                       std::initializer_list<const at::Tensor*> mods) {
  if (requested != 4 || channels % 4 != 0) return 1;
  for (const auto* t : rows) {
    if (!aligned_to(*t, 4 * t->element_size())) return 1;
  }
  for (const auto* m : mods) {
    if (!adaln::mod_vector_loads_by_4(*m)) return 1;
  }
  return 4;
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
// grid * block * vec * pack <= grid * block * 16, modulation indexes up to mod_span)
// fits, else int64_t.
template <typename F>
void with_index(const Launch& l, int64_t mod_span, F&& f) {
  const int64_t bound = std::max(static_cast<int64_t>(l.grid.x) * l.block.x * 16, mod_span);
  if (bound < (int64_t{1} << 32)) {
    f(uint32_t{});
  } else {
    f(int64_t{});
  }
}

// Calls f(vec, pack, index): the launch's compile-time choices, one instantiation per
// combination (with_vec, with_pack, with_index), so that each launcher names only its kernel.
template <typename F>
void with_launch(int64_t vec, int64_t pack, const Launch& l, int64_t mod_span, F&& f) {
  with_vec(vec, [&](auto v) {
    with_pack(pack,
              [&](auto pc) { with_index(l, mod_span, [&](auto index) { f(v, pc, index); }); });
  });
}

}  // namespace

at::Tensor modulate_forward(const at::Tensor& normed, const at::Tensor& scale,
                            const at::Tensor& shift, int64_t threads, int64_t vec, int64_t pack) {
  check_rows(normed, normed);
  const c10::cuda::CUDAGuard guard(normed.device());
  const Dims mi = mod_index(normed);
  const int64_t ss = mod_stride(scale, normed), hs = mod_stride(shift, normed);
  auto out = empty_output(normed.sizes(), normed.options().dtype(at::kFloat));
  if (normed.numel() == 0) return out;
  const int64_t pk = effective_pack(pack, normed.size(2), {&normed, &out}, {&scale, &shift});
  const Launch l = plan(normed.numel(), threads, vec, pk);
  auto stream = at::cuda::getCurrentCUDAStream();
  with_type(normed.scalar_type(), [&](auto tn) {
    using TN = decltype(tn);
    with_launch(vec, pk, l, std::max(span(scale), span(shift)), [&](auto v, auto pc, auto index) {
      using I = decltype(index);
      modulate_fwd_kernel<TN, decltype(v)::value, decltype(pc)::value, I>
          <<<l.grid, l.block, 0, stream>>>(normed.data_ptr<TN>(), scale.data_ptr<float>(),
                                           shift.data_ptr<float>(), out.data_ptr<float>(), I(l.n),
                                           ModIndex<I>{I(mi.channels), I(mi.seq)}, I(ss), I(hs));
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    });
  });
  return out;
}

std::pair<at::Tensor, at::Tensor> modulate_backward(const at::Tensor& grad,
                                                    const at::Tensor& normed,
                                                    const at::Tensor& scale, int64_t threads,
                                                    int64_t vec, int64_t pack) {
  check_rows(normed, normed);
  check_rows(grad, normed);
  TORCH_CHECK(grad.scalar_type() == at::kFloat, "adaln: modulate grad must be float32");
  const c10::cuda::CUDAGuard guard(normed.device());
  const Dims mi = mod_index(normed);
  const int64_t ss = mod_stride(scale, normed);
  auto g_normed = empty_output(normed.sizes(), normed.options());
  auto g_scale_elem = empty_output(normed.sizes(), normed.options().dtype(at::kFloat));
  if (normed.numel() == 0) return {g_normed, g_scale_elem};
  const int64_t pk =
      effective_pack(pack, normed.size(2), {&grad, &normed, &g_normed, &g_scale_elem}, {&scale});
  const Launch l = plan(normed.numel(), threads, vec, pk);
  auto stream = at::cuda::getCurrentCUDAStream();
  with_type(normed.scalar_type(), [&](auto tn) {
    using TN = decltype(tn);
    with_launch(vec, pk, l, span(scale), [&](auto v, auto pc, auto index) {
      using I = decltype(index);
      modulate_bwd_kernel<TN, decltype(v)::value, decltype(pc)::value, I>
          <<<l.grid, l.block, 0, stream>>>(grad.data_ptr<float>(), normed.data_ptr<TN>(),
                                           scale.data_ptr<float>(), g_normed.data_ptr<TN>(),
                                           g_scale_elem.data_ptr<float>(), I(l.n),
                                           ModIndex<I>{I(mi.channels), I(mi.seq)}, I(ss));
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    });
  });
  return {g_normed, g_scale_elem};
}

at::Tensor gated_forward(const at::Tensor& x, const at::Tensor& y, const at::Tensor& gate,
                         int64_t threads, int64_t vec, int64_t pack) {
  check_rows(x, x);
  check_rows(y, x);
  const c10::cuda::CUDAGuard guard(x.device());
  const Dims mi = mod_index(x);
  const int64_t gs = mod_stride(gate, x);
  auto out = empty_output(x.sizes(), x.options().dtype(at::kFloat));
  if (x.numel() == 0) return out;
  const int64_t pk = effective_pack(pack, x.size(2), {&x, &y, &out}, {&gate});
  const Launch l = plan(x.numel(), threads, vec, pk);
  auto stream = at::cuda::getCurrentCUDAStream();
  with_types(x.scalar_type(), y.scalar_type(), [&](auto tx, auto ty) {
    using TX = decltype(tx);
    using TY = decltype(ty);
    with_launch(vec, pk, l, span(gate), [&](auto v, auto pc, auto index) {
      using I = decltype(index);
      gated_fwd_kernel<TX, TY, decltype(v)::value, decltype(pc)::value, I>
          <<<l.grid, l.block, 0, stream>>>(x.data_ptr<TX>(), y.data_ptr<TY>(),
                                           gate.data_ptr<float>(), out.data_ptr<float>(), I(l.n),
                                           ModIndex<I>{I(mi.channels), I(mi.seq)}, I(gs));
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    });
  });
  return out;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> gated_backward(
    const at::Tensor& grad, at::ScalarType x_dtype, const at::Tensor& y, const at::Tensor& gate,
    int64_t threads, int64_t vec, int64_t pack) {
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
  const int64_t pk =
      cast_x ? effective_pack(pack, y.size(2), {&grad, &y, &g_x, &g_y, &g_gate_elem}, {&gate})
             : effective_pack(pack, y.size(2), {&grad, &y, &g_y, &g_gate_elem}, {&gate});
  const Launch l = plan(y.numel(), threads, vec, pk);
  auto stream = at::cuda::getCurrentCUDAStream();
  with_types(x_dtype, y.scalar_type(), [&](auto tx, auto ty) {
    using TX = decltype(tx);
    using TY = decltype(ty);
    with_launch(vec, pk, l, span(gate), [&](auto v, auto pc, auto index) {
      using I = decltype(index);
      gated_bwd_kernel<TX, TY, decltype(v)::value, decltype(pc)::value, I>
          <<<l.grid, l.block, 0, stream>>>(
              grad.data_ptr<float>(), y.data_ptr<TY>(), gate.data_ptr<float>(),
              cast_x ? g_x.data_ptr<TX>() : nullptr, g_y.data_ptr<TY>(),
              g_gate_elem.data_ptr<float>(), I(l.n), ModIndex<I>{I(mi.channels), I(mi.seq)}, I(gs));
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    });
  });
  return {g_x, g_y, g_gate_elem};
}

at::Tensor bias_add_forward(const at::Tensor& y, const at::Tensor& bias, int64_t threads,
                            int64_t vec, int64_t pack) {
  TORCH_CHECK(y.is_cuda() && y.is_contiguous() && y.dim() >= 1,
              "adaln: bias add needs a contiguous CUDA y");
  TORCH_CHECK(bias.is_cuda() && bias.device() == y.device() && bias.scalar_type() == at::kFloat &&
                  bias.dim() == 1 && bias.is_contiguous() && bias.size(0) == y.size(-1),
              "adaln: bias must be a contiguous float32 [C] on y's device, C = y's last dim");
  const c10::cuda::CUDAGuard guard(y.device());
  auto out = empty_output(y.sizes(), y.options());
  if (y.numel() == 0) return out;
  const int64_t channels = y.size(-1);
  // The bias is read in packs like a row (aligned to 4 of its elements: 16 bytes).
  const int64_t pk = effective_pack(pack, channels, {&y, &out, &bias}, {});
  const Launch l = plan(y.numel(), threads, vec, pk);
  auto stream = at::cuda::getCurrentCUDAStream();
  with_type(y.scalar_type(), [&](auto ty) {
    using T = decltype(ty);
    with_launch(vec, pk, l, channels, [&](auto v, auto pc, auto index) {
      using I = decltype(index);
      bias_add_kernel<T, decltype(v)::value, decltype(pc)::value, I>
          <<<l.grid, l.block, 0, stream>>>(y.data_ptr<T>(), bias.data_ptr<float>(),
                                           out.data_ptr<T>(), I(l.n), I(channels));
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    });
  });
  return out;
}

}  // namespace sg::kernels::cuda
