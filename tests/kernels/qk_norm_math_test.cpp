// QKNORM's fused structure run on the host: the per-element passes of
// kernels/qk_norm/qk_norm_fused.cu (fused_math.hpp's rms_* functions, plus the rotation for
// the video q/k) around the same ATen reductions and [B, S, 1] ops that
// kernels/qk_norm/qk_norm_fused_variant.cpp runs, against rms_norm_reference's forward and
// LibTorch autograd's backward: bit for bit, float32 and bf16 x, odd shapes, one row.
// This pins the op order and the engine's casts/reductions the CUDA passes reproduce;
// tests/gpu/kernels_qk_norm_test.cpp then checks the kernels themselves.
#include "kernels/common/cuda/fused_math.hpp"
#include "kernels/common/dispatch.hpp"
#include "kernels/qk_norm/qk_norm.hpp"
#include "rope_grid_case.hpp"

#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

namespace sg::kernels {
namespace {

namespace fm = fused_math;

struct Geometry {
  int64_t rows, channels, seq, half_head;
  bool rope;
};

Geometry geometry(const at::Tensor& x, const at::Tensor& table, int64_t heads) {
  return {x.size(0) * x.size(1), x.size(2), x.size(1), x.size(2) / heads / 2, table.defined()};
}

// (cos, sin) of the pair holding element e.
std::pair<double, double> angle(const Geometry& g, const at::Tensor& table, int64_t e) {
  const int64_t row = e / g.channels, c = e % g.channels;
  const double* t =
      table.data_ptr<double>() + ((row % g.seq) * g.half_head + (c / 2) % g.half_head) * 2;
  return {t[0], t[1]};
}

// Rotates the n float32 values at p pair by pair in place, as the kernels do: the output
// after the norm (forward), or the incoming grad before the norm's backward.
void rotate_pairs(float* p, int64_t n, const Geometry& geo, const at::Tensor& table,
                  bool backward) {
  for (int64_t e = 0; e < n; e += 2) {
    const auto [c, s] = angle(geo, table, e);
    double r0, r1;
    if (backward) {
      fm::rope_backward(fm::to_double(p[e]), fm::to_double(p[e + 1]), c, s, r0, r1);
    } else {
      fm::rope_forward(fm::to_double(p[e]), fm::to_double(p[e + 1]), c, s, r0, r1);
    }
    p[e] = fm::from_double<float>(r0);
    p[e + 1] = fm::from_double<float>(r1);
  }
}

template <typename T>
std::pair<at::Tensor, at::Tensor> forward_emulate(const at::Tensor& x, const at::Tensor& w,
                                                  double eps, const at::Tensor& table,
                                                  int64_t heads) {
  const Geometry geo = geometry(x, table, heads);
  const T* xp = x.data_ptr<T>();
  const float* wp = w.data_ptr<float>();
  auto sq = at::empty(x.sizes(), x.options().dtype(at::kFloat));
  for (int64_t e = 0; e < x.numel(); ++e)
    sq.data_ptr<float>()[e] = fm::rms_square(fm::to_float(xp[e]));
  auto r = at::rsqrt(sq.mean(-1, /*keepdim=*/true) + eps);
  auto out = at::empty(x.sizes(), x.options().dtype(at::kFloat));
  float* op = out.data_ptr<float>();
  for (int64_t e = 0; e < x.numel(); ++e) {
    op[e] = fm::rms_normalize<T>(fm::to_float(xp[e]), r.data_ptr<float>()[e / geo.channels],
                                 wp[e % geo.channels]);
  }
  if (geo.rope) rotate_pairs(op, x.numel(), geo, table, /*backward=*/false);
  return {out, r};
}

// Returns (x's grad, w's grad) for the output grad g (float32, x's element count).
template <typename T>
std::pair<at::Tensor, at::Tensor> backward_emulate(const at::Tensor& g_out, const at::Tensor& x,
                                                   const at::Tensor& w, const at::Tensor& r,
                                                   const at::Tensor& table, int64_t heads) {
  const Geometry geo = geometry(x, table, heads);
  auto g = g_out.contiguous().view(x.sizes()).clone();
  float* gp = g.data_ptr<float>();
  if (geo.rope) rotate_pairs(gp, x.numel(), geo, table, /*backward=*/true);
  const T* xp = x.data_ptr<T>();
  const float* wp = w.data_ptr<float>();
  const float* rp = r.data_ptr<float>();
  auto g_r_elem = at::empty(x.sizes(), g.options()), g_w_elem = at::empty(x.sizes(), g.options());
  for (int64_t e = 0; e < x.numel(); ++e) {
    fm::rms_backward_products<T>(gp[e], fm::to_float(xp[e]), rp[e / geo.channels],
                                 wp[e % geo.channels], g_r_elem.data_ptr<float>()[e],
                                 g_w_elem.data_ptr<float>()[e]);
  }
  auto g_r = at::sum_to(g_r_elem, r.sizes());
  auto g_w = at::sum_to(g_w_elem, w.sizes());
  auto g_mean = ((g_r * -0.5) * r.pow(3)) / x.size(2);
  auto gx = at::empty(x.sizes(), x.options());
  for (int64_t e = 0; e < x.numel(); ++e) {
    const int64_t row = e / geo.channels;
    gx.data_ptr<T>()[e] = fm::rms_grad_input<T>(
        gp[e], fm::to_float(xp[e]), rp[row], wp[e % geo.channels], g_mean.data_ptr<float>()[row]);
  }
  return {gx, g_w};
}

// The emulated passes of x (float32 or bf16) against the reference's output y and the
// grads autograd left in xr and wr for the output grad g.
void expect_emulation_matches(const at::Tensor& x, const at::Tensor& w, const at::Tensor& table,
                              int64_t heads, const at::Tensor& y, const at::Tensor& g,
                              const at::Tensor& xr, const at::Tensor& wr, const std::string& what) {
  auto run = [&](auto tag) {
    using T = decltype(tag);
    auto [out, r] = forward_emulate<T>(x, w, 1e-6, table, heads);
    EXPECT_TRUE(bitwise_equal(out.view(y.sizes()), y.detach())) << what;
    auto [gx, gw] = backward_emulate<T>(g, x, w, r, table, heads);
    EXPECT_TRUE(bitwise_equal(gx, xr.grad())) << what;
    EXPECT_TRUE(bitwise_equal(gw, wr.grad())) << what;
  };
  if (x.scalar_type() == at::kFloat) {
    run(float{});
  } else {
    run(c10::BFloat16{});
  }
}

void check(const RopeGridCase& k, bool rope) {
  const int64_t c = k.heads * k.head_dim;
  auto table = rope ? k.table() : at::Tensor();
  auto x = (at::randn({k.b, k.tokens(), c}) * 3 + 0.5).to(k.dtype);
  auto w = at::randn({c}) * 0.5 + 1;
  auto xr = x.clone().requires_grad_(true), wr = w.clone().requires_grad_(true);
  auto y = rope ? rms_norm_rope_reference(xr, wr, 1e-6, table, k.heads)
                : rms_norm_reference(xr, wr, 1e-6);
  ASSERT_EQ(y.scalar_type(), at::kFloat);
  auto g = at::randn(y.sizes());
  y.backward(g);
  const std::string what =
      std::string(c10::toString(k.dtype)) + (rope ? " rope" : "") + " C=" + std::to_string(c);
  expect_emulation_matches(x, w, table, k.heads, y, g, xr, wr, what);
}

TEST(QkNormMath, ForwardAndBackwardMatchReferenceBitwise) {
  const std::vector<RopeGridCase> cases = {
      {2, 2, 2, 2, 2, 12, at::kFloat},    {2, 2, 2, 2, 2, 12, at::kBFloat16},
      {1, 1, 1, 1, 1, 6, at::kFloat},     {3, 1, 3, 1, 3, 10, at::kBFloat16},
      {1, 2, 2, 4, 4, 32, at::kBFloat16}, {2, 1, 1, 3, 1, 14, at::kFloat},
  };
  at::manual_seed(21);
  for (const auto& k : cases) {
    check(k, /*rope=*/false);
    check(k, /*rope=*/true);
  }
}

TEST(QkNormMath, OddChannelCountWithoutRotation) {
  at::manual_seed(22);
  for (auto dtype : {at::kFloat, at::kBFloat16}) {
    auto x = at::randn({2, 3, 33}).to(dtype);
    auto w = at::randn({33});
    auto xr = x.clone().requires_grad_(true), wr = w.clone().requires_grad_(true);
    auto y = rms_norm_reference(xr, wr, 1e-6);
    auto g = at::randn(y.sizes());
    y.backward(g);
    expect_emulation_matches(x, w, at::Tensor(), 1, y, g, xr, wr, c10::toString(dtype));
  }
}

}  // namespace
}  // namespace sg::kernels
