// The fused kernels' per-element math (kernels/common/cuda/fused_math.hpp) run on the host over
// whole tensors, the way the CUDA kernels apply it, against the reference ops' forward
// and LibTorch autograd's backward: bit for bit (bitwise_equal: -0.0 != +0.0). This pins
// the rounding steps and the engine's accumulation semantics (the "+ 0" of summed
// zero-filled select/slice grads, the dtype casts, sum_to for broadcast operands) that
// the CUDA kernels must reproduce; tests/gpu/kernels_*_test.cpp then check the kernels.
#include "kernels/common/cuda/fused_math.hpp"
#include "kernels/adaln/adaln.hpp"
#include "kernels/cat/cat.hpp"
#include "kernels/common/dispatch.hpp"
#include "kernels/rope/rope.hpp"
#include "rope_grid_case.hpp"

#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <limits>

namespace sg::kernels {
namespace {

namespace fm = fused_math;

template <typename T>
at::Tensor rope_emulate_t(const at::Tensor& in, const at::Tensor& table, bool backward) {
  auto x = in.contiguous();
  auto out = at::empty_like(x);
  const int64_t half = x.size(3) / 2, heads = x.size(2), seq = x.size(1), pairs = x.numel() / 2;
  const T* src = x.data_ptr<T>();
  T* dst = out.data_ptr<T>();
  const double* tab = table.data_ptr<double>();
  for (int64_t p = 0; p < pairs; ++p) {
    const int64_t j = p % half, s = (p / half / heads) % seq;
    const double c = tab[(s * half + j) * 2], sn = tab[(s * half + j) * 2 + 1];
    double r0, r1;
    if (backward) {
      fm::rope_backward(fm::to_double(src[2 * p]), fm::to_double(src[2 * p + 1]), c, sn, r0, r1);
    } else {
      fm::rope_forward(fm::to_double(src[2 * p]), fm::to_double(src[2 * p + 1]), c, sn, r0, r1);
    }
    dst[2 * p] = fm::from_double<T>(r0);
    dst[2 * p + 1] = fm::from_double<T>(r1);
  }
  return out;
}

at::Tensor rope_emulate(const at::Tensor& x, const at::Tensor& table, bool backward) {
  switch (x.scalar_type()) {
    case at::kFloat:
      return rope_emulate_t<float>(x, table, backward);
    case at::kDouble:
      return rope_emulate_t<double>(x, table, backward);
    case at::kBFloat16:
      return rope_emulate_t<c10::BFloat16>(x, table, backward);
    default:
      return rope_emulate_t<c10::Half>(x, table, backward);
  }
}

TEST(FusedMath, RopeForwardAndBackwardMatchReferenceBitwise) {
  const std::vector<RopeGridCase> cases = {
      {2, 3, 2, 2, 3, 12, at::kFloat}, {1, 2, 3, 5, 2, 14, at::kBFloat16},
      {2, 1, 1, 3, 1, 6, at::kDouble}, {1, 2, 2, 3, 3, 18, at::kHalf},
      {1, 5, 4, 4, 2, 32, at::kFloat}, {3, 1, 1, 1, 1, 8, at::kBFloat16},
  };
  at::manual_seed(3);
  for (const auto& c : cases) {
    auto table = c.table();
    auto x = (at::randn({c.b, c.tokens(), c.heads, c.head_dim}, at::kDouble) * 3).to(c.dtype);
    auto xr = x.clone().requires_grad_(true);
    auto y = rope3d_apply_reference(xr, table);
    EXPECT_TRUE(bitwise_equal(rope_emulate(x, table, false), y.detach())) << c.dtype;
    auto g = at::randn(y.sizes(), at::kDouble).to(c.dtype);
    g.view(-1).narrow(0, 0, 8).fill_(-0.0);  // signed zeros: the reference's grads are +0.0
    y.backward(g);
    EXPECT_TRUE(bitwise_equal(rope_emulate(g, table, true), xr.grad())) << c.dtype;
  }
}

template <typename TN>
at::Tensor modulate_forward_emulate(const at::Tensor& normed, const at::Tensor& scale,
                                    const at::Tensor& shift) {
  auto out = at::empty(normed.sizes(), normed.options().dtype(at::kFloat));
  const int64_t c = normed.size(2), s = normed.size(1);
  auto n = normed.contiguous();
  auto sc = scale.expand({normed.size(0), 1, c}).contiguous(),
       sh = shift.expand({normed.size(0), 1, c}).contiguous();
  for (int64_t i = 0; i < n.numel(); ++i) {
    const int64_t m = (i / c / s) * c + i % c;
    out.data_ptr<float>()[i] = fm::modulate_forward(
        fm::to_float(n.data_ptr<TN>()[i]), sc.data_ptr<float>()[m], sh.data_ptr<float>()[m]);
  }
  return out;
}

// The fused modulate's backward: per-element pass, then ATen's reductions.
template <typename TN>
std::vector<at::Tensor> modulate_backward_emulate(const at::Tensor& g, const at::Tensor& x,
                                                  const at::Tensor& shift, const at::Tensor& scale,
                                                  double eps) {
  auto [normed, mean, rstd] = at::native_layer_norm(x, {x.size(2)}, {}, {}, eps);
  const int64_t c = x.size(2), s = x.size(1);
  auto sc = scale.expand({x.size(0), 1, c}).contiguous();
  auto g_normed = at::empty_like(normed),
       prod = at::empty(normed.sizes(), normed.options().dtype(at::kFloat));
  for (int64_t i = 0; i < normed.numel(); ++i) {
    float gn, gs;
    fm::modulate_backward(g.data_ptr<float>()[i], fm::to_float(normed.data_ptr<TN>()[i]),
                          sc.data_ptr<float>()[(i / c / s) * c + i % c], gn, gs);
    g_normed.data_ptr<TN>()[i] = fm::from_float<TN>(gn);
    prod.data_ptr<float>()[i] = gs;
  }
  auto dx = std::get<0>(
      at::native_layer_norm_backward(g_normed, x, {c}, mean, rstd, {}, {}, {true, false, false}));
  return {dx, at::sum_to(g, shift.sizes()), at::sum_to(prod, scale.sizes())};
}

TEST(FusedMath, ModulateForwardAndBackwardMatchReferenceBitwise) {
  at::manual_seed(4);
  for (auto dtype : {at::kFloat, at::kBFloat16}) {
    for (auto shape : std::vector<std::vector<int64_t>>{{2, 7, 24}, {1, 1, 5}, {3, 9, 33}}) {
      const int64_t b = shape[0], c = shape[2];
      auto x = at::randn(shape).to(dtype);
      auto mod = at::randn({b, 6, c});  // shift/scale are chunks: [B, 1, C] with batch stride 6C
      auto chunks = mod.chunk(6, 1);
      auto xr = x.clone().requires_grad_(true);
      auto shift = chunks[0].detach().requires_grad_(true),
           scale = chunks[1].detach().requires_grad_(true);
      auto y = adaln_modulate_reference(xr, shift, scale, 1e-6);
      ASSERT_EQ(y.scalar_type(), at::kFloat);
      auto normed = std::get<0>(at::native_layer_norm(x, {c}, {}, {}, 1e-6));
      auto fwd =
          dtype == at::kFloat
              ? modulate_forward_emulate<float>(normed, scale.detach(), shift.detach())
              : modulate_forward_emulate<c10::BFloat16>(normed, scale.detach(), shift.detach());
      EXPECT_TRUE(bitwise_equal(fwd, y.detach())) << dtype;
      auto g = at::randn(y.sizes());
      y.backward(g);
      auto bwd = dtype == at::kFloat
                     ? modulate_backward_emulate<float>(g, x, shift.detach(), scale.detach(), 1e-6)
                     : modulate_backward_emulate<c10::BFloat16>(g, x, shift.detach(),
                                                                scale.detach(), 1e-6);
      EXPECT_TRUE(bitwise_equal(bwd[0], xr.grad())) << dtype;
      EXPECT_TRUE(bitwise_equal(bwd[1], shift.grad())) << dtype;
      EXPECT_TRUE(bitwise_equal(bwd[2], scale.grad())) << dtype;
    }
  }
}

template <typename TX, typename TY>
std::vector<at::Tensor> gated_emulate(const at::Tensor& x, const at::Tensor& y,
                                      const at::Tensor& gate, const at::Tensor& g) {
  const int64_t c = x.size(2), s = x.size(1);
  auto gt = gate.expand({x.size(0), 1, c}).contiguous();
  auto out = at::empty(x.sizes(), x.options().dtype(at::kFloat));
  auto gx = at::empty_like(x), gy = at::empty_like(y), prod = at::empty_like(out);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float gate_i = gt.data_ptr<float>()[(i / c / s) * c + i % c];
    const float yi = fm::to_float(y.data_ptr<TY>()[i]);
    out.data_ptr<float>()[i] = fm::gated_forward(fm::to_float(x.data_ptr<TX>()[i]), yi, gate_i);
    float g_y, g_gate;
    fm::gated_backward(g.data_ptr<float>()[i], yi, gate_i, g_y, g_gate);
    gx.data_ptr<TX>()[i] = fm::from_float<TX>(g.data_ptr<float>()[i]);
    gy.data_ptr<TY>()[i] = fm::from_float<TY>(g_y);
    prod.data_ptr<float>()[i] = g_gate;
  }
  return {out, gx, gy, at::sum_to(prod, gate.sizes())};
}

TEST(FusedMath, GatedResidualForwardAndBackwardMatchReferenceBitwise) {
  at::manual_seed(5);
  for (auto xt : {at::kFloat, at::kBFloat16}) {
    for (auto yt : {at::kFloat, at::kBFloat16}) {
      const int64_t b = 2, s = 11, c = 19;
      auto x = at::randn({b, s, c}).to(xt), y = at::randn({b, s, c}).to(yt);
      auto gate_full = at::randn({b, 6, c});
      auto gate = gate_full.chunk(6, 1)[2].detach().requires_grad_(true);
      auto xr = x.clone().requires_grad_(true), yr = y.clone().requires_grad_(true);
      auto out = gated_residual_reference(xr, yr, gate);
      auto g = at::randn(out.sizes());
      out.backward(g);
      std::vector<at::Tensor> emu;
      if (xt == at::kFloat && yt == at::kFloat)
        emu = gated_emulate<float, float>(x, y, gate.detach(), g);
      if (xt == at::kFloat && yt == at::kBFloat16)
        emu = gated_emulate<float, c10::BFloat16>(x, y, gate.detach(), g);
      if (xt == at::kBFloat16 && yt == at::kFloat)
        emu = gated_emulate<c10::BFloat16, float>(x, y, gate.detach(), g);
      if (xt == at::kBFloat16 && yt == at::kBFloat16) {
        emu = gated_emulate<c10::BFloat16, c10::BFloat16>(x, y, gate.detach(), g);
      }
      EXPECT_TRUE(bitwise_equal(emu[0], out.detach())) << xt << yt;
      EXPECT_TRUE(bitwise_equal(emu[1], xr.grad())) << xt << yt;
      EXPECT_TRUE(bitwise_equal(emu[2], yr.grad())) << xt << yt;
      EXPECT_TRUE(bitwise_equal(emu[3], gate.grad())) << xt << yt;
    }
  }
}

// The linear bias add: fused_math::bias_add over every element (bias by column) against
// bias_add_reference, which is ATen's in-place add of a float32 bias (what F::linear does to
// its matmul output), including the rounding to bf16 and its ties; backward: y's grad is the
// incoming grad, the bias's the engine's sum of it in y's dtype cast to float32.
TEST(FusedMath, BiasAddMatchesTheInPlaceAddBitwise) {
  at::manual_seed(6);
  for (auto yt : {at::kFloat, at::kBFloat16}) {
    const int64_t b = 3, s = 7, c = 21;
    auto y = (at::randn({b, s, c}) * 100).to(yt);
    // Ties of the bf16 rounding: y + bias exactly halfway between two bf16 values.
    y.view(-1).narrow(0, 0, 4).fill_(1.0);
    auto bias = at::randn({c});
    bias.narrow(0, 0, 4).copy_(at::tensor({0.00390625f, 0.01171875f, -0.00390625f, 0.0f}));
    auto emu = at::empty_like(y);
    for (int64_t i = 0; i < y.numel(); ++i) {
      const float bi = bias.data_ptr<float>()[i % c];
      if (yt == at::kFloat) {
        emu.data_ptr<float>()[i] = fm::bias_add(y.data_ptr<float>()[i], bi);
      } else {
        emu.data_ptr<c10::BFloat16>()[i] = fm::bias_add(y.data_ptr<c10::BFloat16>()[i], bi);
      }
    }
    auto x = y.clone().requires_grad_(true);
    auto br = bias.clone().requires_grad_(true);
    auto mid = x * 1;  // a non-leaf, like the matmul output the model adds the bias to
    auto out = bias_add_reference(mid, br);
    EXPECT_TRUE(bitwise_equal(emu, out.detach())) << yt;
    auto g = at::randn(out.sizes()).to(yt);
    out.backward(g);
    EXPECT_TRUE(bitwise_equal(x.grad(), g)) << yt;
    EXPECT_TRUE(bitwise_equal(br.grad(), at::sum_to(g, bias.sizes()).to(at::kFloat))) << yt;
    // A leaf that requires grad is not changed in place (the first-call check's inputs).
    auto leaf = y.clone().requires_grad_(true);
    auto before = leaf.detach().clone();
    bias_add_reference(leaf, br);
    EXPECT_TRUE(bitwise_equal(leaf.detach(), before)) << yt;
  }
}

TEST(FusedMath, SplitBackwardIsPlusZeroJoinOfBothGrads) {
  for (auto dtype : {at::kFloat, at::kBFloat16, at::kDouble}) {
    auto joint = at::randn({2, 7, 5}).to(dtype).requires_grad_(true);
    auto [v, a] = joint_split_reference(joint, 4);
    auto gv = at::randn(v.sizes()).to(dtype), ga = at::randn(a.sizes()).to(dtype);
    gv.view(-1).narrow(0, 0, 6).fill_(-0.0);
    ga.view(-1).narrow(0, 0, 6).fill_(-0.0);
    torch::autograd::backward({v, a}, {gv, ga});
    auto expect = at::cat({gv, ga}, 1);
    auto flat = expect.view(-1);
    if (dtype == at::kDouble) {
      for (int64_t i = 0; i < flat.numel(); ++i)
        flat.data_ptr<double>()[i] = fm::plus_zero(flat.data_ptr<double>()[i]);
    } else if (dtype == at::kFloat) {
      for (int64_t i = 0; i < flat.numel(); ++i)
        flat.data_ptr<float>()[i] = fm::plus_zero(flat.data_ptr<float>()[i]);
    } else {
      auto* p = flat.data_ptr<c10::BFloat16>();
      for (int64_t i = 0; i < flat.numel(); ++i) p[i] = fm::plus_zero(p[i]);
    }
    EXPECT_TRUE(bitwise_equal(expect, joint.grad())) << dtype;
    EXPECT_FALSE(bitwise_equal(at::cat({gv, ga}, 1), joint.grad()))
        << "signed zeros must be canonicalised";
  }
  // One grad missing: a raw copy next to zeros (no "+ 0").
  auto joint = at::randn({1, 4, 3}).requires_grad_(true);
  auto [v, a] = joint_split_reference(joint, 3);
  auto gv = at::full(v.sizes(), -0.0);
  v.backward(gv);
  EXPECT_TRUE(bitwise_equal(at::cat({gv, at::zeros(a.sizes())}, 1), joint.grad()));
}

TEST(FusedMath, BitwiseEqualSeesSignedZerosAndDtype) {
  auto a = at::zeros({3});
  auto b = at::full({3}, -0.0);
  EXPECT_TRUE(at::equal(a, b));
  EXPECT_FALSE(bitwise_equal(a, b));
  EXPECT_TRUE(bitwise_equal(a, a.clone()));
  EXPECT_FALSE(bitwise_equal(a, a.to(at::kDouble)));
  EXPECT_TRUE(bitwise_equal(a.to(at::kBFloat16), a.to(at::kBFloat16)));
}

}  // namespace
}  // namespace sg::kernels
