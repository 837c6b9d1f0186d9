// ADALN's LayerNorm-inside math (fused_math.hpp's welford_*, layer_norm_* and modulate
// functions) in the row order of kernels/adaln/layer_norm_order.cuh (ATen's CUDA order: 128
// threads per row, 4-element vectors, shuffle-down trees, then the warps), run on the host
// against LibTorch's CPU LayerNorm + modulate and its autograd backward. The CPU kernel sums
// in another order, so the comparison is within float32 rounding, not bitwise (the GPU test
// KernelsAdaln.ModulateWithLayerNormInsideMatchesPlainBitwise compares the CUDA kernels with
// ATen's CUDA LayerNorm bit for bit); this catches a wrong formula, sign or tree here.
#include "kernels/adaln/adaln.hpp"
#include "kernels/common/cuda/fused_math.hpp"

#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace sg::kernels {
namespace {

namespace fm = fused_math;
constexpr int kThreads = 128, kWarps = 4, kVec = 4;

// A warp's shuffle-down tree: lane l takes lane l + offset, lanes past 31 their own value;
// combine(level, own, other) at levels 0 (offset 16) to 4 (offset 1).
template <typename T, typename Combine>
T warp_tree(std::array<T, 32> lanes, Combine&& combine) {
  int level = 0;
  for (int offset = 16; offset > 0; offset >>= 1, ++level) {
    const auto before = lanes;
    for (int l = 0; l < 32; ++l)
      lanes[l] = combine(level, before[l], before[l + offset < 32 ? l + offset : l]);
  }
  return lanes[0];
}

// The row's mean and variance in ATen's order (layer_norm_order.cuh's row_stats): each
// thread's pushes, the warps' shuffle trees, then the tree over the warps at levels 5 and 6.
template <typename Combine>
std::pair<float, float> row_stats(const float* row, int n, Combine&& combine) {
  std::array<fm::WelfordLN, kThreads> thread{};
  for (int t = 0; t < kThreads; ++t) {
    for (int i = t; i < n / kVec; i += kThreads) {
      for (int e = 0; e < kVec; ++e) thread[t] = fm::welford_push(thread[t], row[i * kVec + e]);
    }
  }
  std::array<fm::WelfordLN, kWarps> warp{};
  for (int w = 0; w < kWarps; ++w) {
    std::array<fm::WelfordLN, 32> lanes{};
    std::copy(thread.begin() + 32 * w, thread.begin() + 32 * (w + 1), lanes.begin());
    warp[w] = warp_tree(lanes, combine);
  }
  int level = 5;
  for (int offset = kWarps / 2; offset > 0; offset /= 2, ++level) {
    for (int w = 0; w < offset; ++w) warp[w] = combine(level, warp[w], warp[w + offset]);
  }
  return {warp[0].mean, fm::fdiv(warp[0].sigma2, static_cast<float>(n))};
}

// With ATen's dividing combines.
std::pair<float, float> row_stats(const float* row, int n) {
  return row_stats(row, n,
                   [](int, fm::WelfordLN b, fm::WelfordLN a) { return fm::welford_combine(b, a); });
}

// With the fused forward's combines for rows that fill every thread's register slots
// (C = 512 * K, K vectors per thread): level l joins two partials of 4 * K * 2^l elements
// each with welford_combine_equal, no division.
std::pair<float, float> row_stats_equal(const float* row, int n) {
  const float first = static_cast<float>(n / kThreads);  // 4 * K
  return row_stats(row, n, [first](int level, fm::WelfordLN b, fm::WelfordLN a) {
    const float count = first * static_cast<float>(1 << level);
    return fm::welford_combine_equal(b, a, count, fm::welford_equal_weight(count));
  });
}

uint32_t bits(float v) {
  uint32_t u = 0;
  std::memcpy(&u, &v, sizeof u);
  return u;
}

// BlockReduceSum: warp sums, then warp 0 sums the 4 results with zeros in its other lanes.
float row_sum(const std::array<float, kThreads>& v) {
  const auto add = [](int, float a, float b) { return fm::fadd(a, b); };
  std::array<float, 32> first{};
  for (int w = 0; w < kWarps; ++w) {
    std::array<float, 32> lanes{};
    std::copy(v.begin() + 32 * w, v.begin() + 32 * (w + 1), lanes.begin());
    first[w] = warp_tree(lanes, add);
  }
  return warp_tree(first, add);
}

struct Emulated {
  at::Tensor out, dx;
};

// x [B, S, C] float32, shift/scale [B, 1, C], g the grad of the output.
Emulated emulate(const at::Tensor& x, const at::Tensor& shift, const at::Tensor& scale,
                 const at::Tensor& g, float eps) {
  const int64_t seq = x.size(1), n = x.size(2), rows = x.size(0) * seq;
  auto out = at::empty_like(x), dx = at::empty_like(x);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x.data_ptr<float>() + r * n;
    const float* gr = g.data_ptr<float>() + r * n;
    const float* sc = scale.data_ptr<float>() + (r / seq) * n;
    const float* sh = shift.data_ptr<float>() + (r / seq) * n;
    const auto [mean, var] = row_stats(xr, static_cast<int>(n));
    const float rstd = 1.0f / std::sqrt(fm::fadd(var, eps));  // the device's rsqrtf, within 2 ulp
    std::array<float, kThreads> sum1{}, sum2{};
    for (int64_t c = 0; c < n; ++c) {
      out.data_ptr<float>()[r * n + c] =
          fm::modulate_forward(fm::layer_norm_normalize(xr[c], mean, rstd), sc[c], sh[c]);
      const int t = static_cast<int>((c / kVec) % kThreads);
      fm::layer_norm_grad_terms(fm::modulate_grad_normed(gr[c], sc[c]), xr[c], mean, rstd, sum1[t],
                                sum2[t]);
    }
    const float s1 = row_sum(sum1), s2 = row_sum(sum2), fn = static_cast<float>(n);
    const float term1 = fm::fmul(fm::fdiv(1.0f, fn), rstd);
    for (int64_t c = 0; c < n; ++c) {
      dx.data_ptr<float>()[r * n + c] = fm::layer_norm_grad_input(
          fm::modulate_grad_normed(gr[c], sc[c]), xr[c], mean, rstd, s1, s2, fn, term1);
    }
  }
  return {out, dx};
}

TEST(LayerNormOrder, EmulatedLayerNormModulateMatchesLibTorchWithinRounding) {
  at::manual_seed(21);
  // C = 36 and 96: fewer vectors than threads; 1536: the model's width (3 per thread);
  // offset 300: rows whose mean is far from zero.
  for (const auto& [b, seq, c] :
       std::vector<std::array<int64_t, 3>>{{2, 5, 36}, {1, 3, 96}, {2, 2, 1536}}) {
    for (double offset : {0.0, 300.0}) {
      auto x = at::randn({b, seq, c}) * 3 + offset;
      auto mod = (at::randn({b, 6, c}) * 0.5).chunk(6, 1);
      auto shift = mod[0].contiguous(), scale = mod[1].contiguous();
      auto g = at::randn({b, seq, c});
      const auto emulated = emulate(x, shift, scale, g, 1e-6f);

      auto xr = x.clone().requires_grad_(true);
      auto out = adaln_modulate_reference(xr, shift, scale, 1e-6);
      auto dx = torch::autograd::grad({out}, {xr}, {g})[0];
      const std::string what = "C=" + std::to_string(c) + " offset " + std::to_string(offset);
      EXPECT_TRUE(at::allclose(emulated.out, out.detach(), 1e-4, 1e-4)) << what;
      EXPECT_TRUE(at::allclose(emulated.dx, dx, 1e-3, 1e-4))
          << what << " max diff " << (emulated.dx - dx).abs().max().item<float>();
    }
  }
}

// The forward kernel's equal-count combines (adaln_layer_norm_kernels.cuh, EqualWeights) are
// the dividing combines' operations on the same values: same mean and variance bits.
TEST(LayerNormOrder, EqualCountCombinesGiveTheDividingCombinesBits) {
  at::manual_seed(22);
  for (int c : {512, 1024, 1536, 2048}) {
    for (double offset : {0.0, 300.0, -7.5}) {
      for (int trial = 0; trial < 8; ++trial) {
        const auto x = (at::randn({c}) * (1 + trial) + offset).contiguous();
        const auto dividing = row_stats(x.data_ptr<float>(), c);
        const auto equal = row_stats_equal(x.data_ptr<float>(), c);
        const std::string what = "C=" + std::to_string(c) + " offset " + std::to_string(offset);
        ASSERT_EQ(bits(equal.first), bits(dividing.first)) << what << " mean";
        ASSERT_EQ(bits(equal.second), bits(dividing.second)) << what << " variance";
      }
    }
  }
  // Single combines of random partials: counts of the kernels' levels (3 * 2^k and powers of
  // 2, where count * (1 / (2 count)) rounds to 0.5 exactly) and others where it does not
  // (41, 47, 55, 97: 0.49999997), and products with the count that round.
  const auto v = at::randn({4, 1000}) * 10;
  const auto sq = v.abs() * 100;
  for (float count : {3.0f, 12.0f, 24.0f, 384.0f, 768.0f, 1536.0f, 41.0f, 47.0f, 55.0f, 97.0f}) {
    for (int i = 0; i < 1000; ++i) {
      const fm::WelfordLN b{v[0][i].item<float>(), sq[1][i].item<float>(), count};
      const fm::WelfordLN a{v[2][i].item<float>(), sq[3][i].item<float>(), count};
      const auto want = fm::welford_combine(b, a);
      const auto got = fm::welford_combine_equal(b, a, count, fm::welford_equal_weight(count));
      ASSERT_EQ(bits(got.mean), bits(want.mean)) << count << " #" << i;
      ASSERT_EQ(bits(got.sigma2), bits(want.sigma2)) << count << " #" << i;
      ASSERT_EQ(got.count, want.count) << count;
    }
  }
}

TEST(LayerNormOrder, WelfordCombineOfEmptyPartialsIsEmpty) {
  const auto w = fm::welford_combine({0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f});
  EXPECT_EQ(w.mean, 0.0f);
  EXPECT_EQ(w.sigma2, 0.0f);
  EXPECT_EQ(w.count, 0.0f);
  // One element pushed into an empty partial: its mean is the element, no variance.
  const auto one = fm::welford_push({0.0f, 0.0f, 0.0f}, 2.5f);
  EXPECT_EQ(one.mean, 2.5f);
  EXPECT_EQ(one.sigma2, 0.0f);
  EXPECT_EQ(one.count, 1.0f);
}

}  // namespace
}  // namespace sg::kernels
