// ADALN's fused CUDA variant against the plain variant, bit for bit, forward and autograd
// backward: LayerNorm + modulate (float32 and bf16 rows, and bf16 rows under bf16
// autocast as in the trainer) and the gated residual (float32 / bf16 x and y), every
// legal parameter combination, base and odd shapes, modulation vectors that are chunks
// of [B, 6, C] or broadcast [1, 1, C], poisoned outputs; the linear layers' bias add (float32 /
// bf16 rows, float32 bias) behind a matmul as the model runs it; plus the first-call check.
#include "kernels/adaln/adaln.hpp"
#include "kernels/adaln/adaln_launchers.hpp"
#include "tests/gpu/kernels_test_util.hpp"
#include "trainer/runtime/autocast.hpp"

namespace sg::kernels {
namespace {

using gpu_test::cuda0;
using gpu_test::RowShape;

// base video rows (1280 x 1536), base action rows (16 x 512), then odd ones.
const std::vector<RowShape> kShapes = gpu_test::with_odd_rows({{2, 1280, 1536}, {2, 16, 512}});

// shift, scale, gate as the trainer makes them: chunks of [B, 6, C] float32.
std::vector<at::Tensor> modulation(const RowShape& s, bool broadcast) {
  auto mod =
      at::randn({broadcast ? 1 : s.b, 6, s.channels}, at::TensorOptions().device(cuda0())) * 0.5;
  return mod.chunk(6, 1);
}

gpu_test::Pass modulate_pass(const AdalnVariant& v, const ParamValues& p,
                             const std::vector<at::Tensor>& in3, const at::Tensor& seed,
                             bool autocast) {
  trainer::AutocastScope scope({autocast, at::kBFloat16});
  return gpu_test::run_single(
      [&](const std::vector<at::Tensor>& in) {
        return v.run({in[0], in[1], in[2], 1e-6}, p);
      },
      in3, {true, true, true}, seed);
}

gpu_test::Pass gated_pass(const AdalnVariant& v, const ParamValues& p,
                          const std::vector<at::Tensor>& in3, const at::Tensor& seed) {
  return gpu_test::run_single(
      [&](const std::vector<at::Tensor>& in) { return v.gated_residual(in[0], in[1], in[2], p); },
      in3, {true, true, true}, seed);
}

// Every legal ADALN variant can run `problem`, and its pass `fused(p)` matches the plain
// variant's `ref` bit for bit; `what` names the case in a failure, after the variant.
template <typename FusedPass>
void expect_every_variant_matches(const Problem& problem, const gpu_test::Pass& ref,
                                  const std::string& what, FusedPass&& fused) {
  for (const auto& p : legal_params(family("ADALN"))) {
    const std::string named = "ADALN " + gpu_test::str(p) + what;
    ASSERT_EQ(fused_adaln()->can_implement(problem, p), Status::kSuccess) << named;
    gpu_test::expect_same(ref, fused(p), named);
  }
}

TEST(KernelsAdaln, ModulateEveryVariantMatchesPlainBitwise) {
  const auto params = gpu_test::fused_params("ADALN", fused_adaln());
  ASSERT_FALSE(params.empty());
  const gpu_test::SweepScope scope(13);
  for (const auto& s : kShapes) {
    for (bool broadcast : {false, true}) {
      // (x dtype, autocast): float32 rows, bf16 rows, bf16 rows under autocast.
      for (auto [dtype, autocast] : std::vector<std::pair<at::ScalarType, bool>>{
               {at::kFloat, false}, {at::kBFloat16, false}, {at::kBFloat16, true}}) {
        auto x = (at::randn({s.b, s.seq, s.channels}, at::TensorOptions().device(cuda0())) * 3 + 1)
                     .to(dtype);
        auto mod = modulation(s, broadcast);
        auto seed = at::randn({s.b, s.seq, s.channels}, x.options().dtype(at::kFloat));
        const std::vector<at::Tensor> in{x, mod[0], mod[1]};
        const auto ref = modulate_pass(plain_adaln(), {}, in, seed, autocast);
        ASSERT_EQ(ref.outputs[0].scalar_type(), at::kFloat);
        const std::string what = std::string("modulate ") + c10::toString(dtype) +
                                 (autocast ? " autocast" : "") + (broadcast ? " [1,1,C]" : "") +
                                 " C=" + std::to_string(s.channels);
        ASSERT_NO_FATAL_FAILURE(expect_every_variant_matches(
            adaln_problem({x, mod[0], mod[1], 1e-6}), ref, what, [&](const ParamValues& p) {
              return modulate_pass(*fused_adaln(), p, in, seed, autocast);
            }));
      }
    }
  }
}

// The LayerNorm-inside kernels (adaln_layer_norm.cu): they apply at the model's shapes, and
// reproduce ATen's statistics and LayerNorm backward bit for bit, also where a row has fewer
// 4-element vectors than its 128 threads (C = 36, 96: threads with no element combine
// empty partials), several per thread in registers (C = 1000: 2 or 1; 2000: 4 or 3) or read
// twice (C = 3072), rows that fill every thread's register slots (C = 512, 1024, 1536, 2048:
// 1 to 4 each, the forward's combines with equal-count weights instead of divisions),
// several rows per block with a partial last block (21 rows), every row group size (32, 64
// or 128 threads playing ATen's 128: row_threads), rows whose mean is far from zero, and a
// misaligned x (the statistics then stay ATen's: still bitwise).
TEST(KernelsAdaln, ModulateWithLayerNormInsideMatchesPlainBitwise) {
  const gpu_test::SweepScope scope(15);
  const auto opts = at::TensorOptions().device(cuda0());
  for (const auto& s : std::vector<RowShape>{{2, 1280, 1536},
                                             {3, 7, 36},
                                             {1, 5, 96},
                                             {3, 7, 512},
                                             {2, 3, 1024},
                                             {3, 7, 1000},
                                             {2, 3, 2000},
                                             {1, 3, 2048},
                                             {2, 3, 3072}}) {
    for (double offset : {0.0, 300.0}) {
      for (auto [dtype, autocast] : std::vector<std::pair<at::ScalarType, bool>>{
               {at::kFloat, false}, {at::kBFloat16, true}}) {
        auto x = (at::randn({s.b, s.seq, s.channels}, opts) * 3 + offset).to(dtype);
        auto mod = modulation(s, false);
        ASSERT_TRUE(cuda::modulate_layer_norm_applies(x, mod[1], mod[0], autocast));
        auto seed = at::randn({s.b, s.seq, s.channels}, opts);
        const std::vector<at::Tensor> in{x, mod[0], mod[1]};
        const auto ref = modulate_pass(plain_adaln(), {}, in, seed, autocast);
        const std::string what = std::string(" layer-norm inside ") + c10::toString(dtype) +
                                 " offset " + std::to_string(offset) +
                                 " C=" + std::to_string(s.channels);
        ASSERT_NO_FATAL_FAILURE(expect_every_variant_matches(
            adaln_problem({x, mod[0], mod[1], 1e-6}), ref, what, [&](const ParamValues& p) {
              return modulate_pass(*fused_adaln(), p, in, seed, autocast);
            }));
      }
    }
  }
  // x one element into its buffer: not 16-byte aligned, so ATen's own LayerNorm leaves its
  // vectorised path and the fused variant keeps ATen's statistics.
  auto x = at::randn({2 * 7 * 36 + 1}, opts).narrow(0, 1, 2 * 7 * 36).view({2, 7, 36});
  auto mod = modulation({2, 7, 36}, false);
  EXPECT_FALSE(cuda::modulate_layer_norm_applies(x, mod[1], mod[0], false));
  const std::vector<at::Tensor> in{x, mod[0], mod[1]};
  auto seed = at::randn({2, 7, 36}, opts);
  const auto ref = modulate_pass(plain_adaln(), {}, in, seed, false);
  EXPECT_NO_FATAL_FAILURE(expect_every_variant_matches(
      adaln_problem({x, mod[0], mod[1], 1e-6}), ref, " misaligned x",
      [&](const ParamValues& p) { return modulate_pass(*fused_adaln(), p, in, seed, false); }));
}

TEST(KernelsAdaln, GatedResidualEveryVariantMatchesPlainBitwise) {
  const gpu_test::SweepScope scope(14);
  for (const auto& s : kShapes) {
    for (auto xt : {at::kFloat, at::kBFloat16}) {
      for (auto yt : {at::kFloat, at::kBFloat16}) {
        auto x = gpu_test::random_like_with_zeros({s.b, s.seq, s.channels}, xt, cuda0());
        auto y = gpu_test::random_like_with_zeros({s.b, s.seq, s.channels}, yt, cuda0());
        auto gate = modulation(s, /*broadcast=*/xt != yt)[2];
        auto seed = gpu_test::random_like_with_zeros({s.b, s.seq, s.channels}, at::kFloat, cuda0());
        const std::vector<at::Tensor> in{x, y, gate};
        const auto ref = gated_pass(plain_adaln(), {}, in, seed);
        const std::string what = std::string("gated ") + c10::toString(xt) + "+" +
                                 c10::toString(yt) + " C=" + std::to_string(s.channels);
        ASSERT_NO_FATAL_FAILURE(expect_every_variant_matches(
            gated_problem(x, y, gate), ref, what,
            [&](const ParamValues& p) { return gated_pass(*fused_adaln(), p, in, seed); }));
      }
    }
  }
}

// The linear layers' bias add as the model runs it: y = x.matmul(w^T) (not a leaf), then
// y += bias [C] float32 (plain: ATen's in-place add, its casting loop for bf16 y) or the fused
// pass; the output and the grads of x, w and bias bitwise, every variant, base and odd widths.
gpu_test::Pass bias_pass(const AdalnVariant& v, const ParamValues& p,
                         const std::vector<at::Tensor>& in3, const at::Tensor& seed) {
  return gpu_test::run_single(
      [&](const std::vector<at::Tensor>& in) {
        return v.bias_add(in[0].matmul(in[1].t()), in[2], p);
      },
      in3, {true, true, true}, seed);
}

TEST(KernelsAdaln, BiasAddEveryVariantMatchesPlainBitwise) {
  const gpu_test::SweepScope scope(15);
  for (const auto& s : kShapes) {
    for (auto dtype : {at::kFloat, at::kBFloat16}) {
      auto x = gpu_test::random_like_with_zeros({s.b, s.seq, 64}, dtype, cuda0());
      auto w = gpu_test::random_like_with_zeros({s.channels, 64}, dtype, cuda0());
      auto bias = gpu_test::random_like_with_zeros({s.channels}, at::kFloat, cuda0());
      auto seed = gpu_test::random_like_with_zeros({s.b, s.seq, s.channels}, dtype, cuda0());
      const std::vector<at::Tensor> in{x, w, bias};
      const auto ref = bias_pass(plain_adaln(), {}, in, seed);
      ASSERT_EQ(ref.outputs[0].scalar_type(), dtype);
      const std::string what =
          std::string("bias ") + c10::toString(dtype) + " C=" + std::to_string(s.channels);
      ASSERT_NO_FATAL_FAILURE(expect_every_variant_matches(
          bias_problem(x.matmul(w.t()), bias), ref, what,
          [&](const ParamValues& p) { return bias_pass(*fused_adaln(), p, in, seed); }));
    }
  }
}

TEST(KernelsAdaln, CanImplementRefusesWhatItCannotRun) {
  const auto& v = *fused_adaln();
  const ParamValues p = family("ADALN").defaults;
  const RowShape s{2, 5, 8};
  auto x = at::randn({s.b, s.seq, s.channels}, at::TensorOptions().device(cuda0()));
  auto mod = modulation(s, false);
  EXPECT_EQ(v.can_implement(adaln_problem({x, mod[0], mod[1], 1e-6}), p), Status::kSuccess);
  EXPECT_NE(v.can_implement(adaln_problem({x.to(at::kHalf), mod[0], mod[1], 1e-6}), p),
            Status::kSuccess);
  EXPECT_NE(v.can_implement(adaln_problem({x.transpose(0, 1), mod[0], mod[1], 1e-6}), p),
            Status::kSuccess);
  EXPECT_NE(v.can_implement(adaln_problem({x, mod[0].to(at::kBFloat16), mod[1], 1e-6}), p),
            Status::kSuccess);
  EXPECT_NE(v.can_implement(adaln_problem({x.cpu(), mod[0].cpu(), mod[1].cpu(), 1e-6}), p),
            Status::kSuccess);
  EXPECT_NE(v.can_implement(gated_problem(x, x.to(at::kHalf), mod[2]), p), Status::kSuccess);
  EXPECT_NE(v.can_implement(gated_problem(x, x.narrow(1, 0, 4), mod[2]), p), Status::kSuccess);
  auto bias = at::randn({s.channels}, x.options());
  EXPECT_EQ(v.can_implement(bias_problem(x, bias), p), Status::kSuccess);
  EXPECT_NE(v.can_implement(bias_problem(x, bias.to(at::kBFloat16)), p), Status::kSuccess);
  EXPECT_NE(v.can_implement(bias_problem(x, bias.narrow(0, 0, 4)), p), Status::kSuccess);
  EXPECT_NE(v.can_implement(bias_problem(x.transpose(1, 2), at::randn({s.seq}, x.options())), p),
            Status::kSuccess);
}

TEST(KernelsAdaln, FirstCallCheckPassesUnderAutocastThenFallsBackOnInjectedMismatch) {
  testing::reset_first_call_checks();
  select_kernels({{{"ADALN", true}}, {{"ADALN", "threads=512,vec=4"}}});
  const RowShape s{2, 1280, 1536};
  auto x =
      at::randn({s.b, s.seq, s.channels}, at::TensorOptions().device(cuda0())).to(at::kBFloat16);
  auto mod = modulation(s, false);
  {
    trainer::AutocastScope scope({true, at::kBFloat16});
    auto h = adaln_modulate(x, mod[0], mod[1], 1e-6);
    auto r = gated_residual(x, h.to(at::kBFloat16), mod[2]);
    auto bias = at::randn({s.channels}, mod[0].options().dtype(at::kFloat));
    auto b = bias_add(x.clone(), bias);  // the fused pass after its first-call check
    EXPECT_TRUE(fallen_back_families().empty());
    EXPECT_TRUE(bitwise_equal(b, bias_add_reference(x.clone(), bias)));
    EXPECT_TRUE(bitwise_equal(h, adaln_modulate_reference(x, mod[0], mod[1], 1e-6)));
  }
  testing::reset_first_call_checks();
  testing::inject_first_call_mismatch("ADALN");
  ::testing::internal::CaptureStderr();
  auto g = gated_residual(x, x, mod[2]);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("ADALN"), std::string::npos) << err;
  EXPECT_EQ(fallen_back_families(), std::vector<std::string>{"ADALN"});
  EXPECT_TRUE(bitwise_equal(g, gated_residual_reference(x, x, mod[2])));
  select_kernels({});
  testing::reset_first_call_checks();
}

}  // namespace
}  // namespace sg::kernels
