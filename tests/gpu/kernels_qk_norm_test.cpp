// QKNORM's fused CUDA variant against the plain variant (rms_norm_reference, and
// rms_norm_rope_reference for the video q/k), bit for bit, forward and autograd backward
// (x's and the weight's grads): every legal parameter combination, float32 and bf16 x
// (bf16 also under bf16 autocast as in training), base shapes (video q/k [B, 1280, 12*128],
// action q/k [B, 16, 1536], cross-attention q [B, 1280, 1536]) and odd shapes (C not a
// multiple of any vector width, one row), poisoned outputs; plus can_implement's refusals
// and the first-call check of both ops.
#include "kernels/qk_norm/qk_norm.hpp"
#include "kernels/qk_norm/qk_norm_launchers.hpp"
#include "tests/gpu/kernels_test_util.hpp"
#include "trainer/runtime/autocast.hpp"

namespace sg::kernels {
namespace {

using gpu_test::cuda0;
using gpu_test::RowShape;

// [B, S, C] rows: base video, base action, then odd ones (C = 33, 1023, 5; one row).
const std::vector<RowShape> kNormShapes = gpu_test::with_odd_rows({{2, 1280, 1536}, {2, 16, 1536}});

struct RopeShape {
  int64_t b, f, h, w, heads, head_dim;
};
// base video q/k (5x16x16 tokens, 12 x 128), then odd ones (one token; head_dim 6 and 10),
// then C = 1536 rows for the one-pass kernel with other head widths: 8 x 192 (its 96 pairs
// do not divide a lane's 64-pair stride: a table read per pair) and 48 x 32, and 21 rows of
// 12 x 128 (two-warp rows: a partial last block).
const std::vector<RopeShape> kRopeShapes = {
    {2, 5, 16, 16, 12, 128}, {1, 1, 1, 1, 1, 6},   {3, 1, 3, 5, 3, 10},  {1, 2, 3, 1, 2, 34},
    {1, 1, 4, 4, 8, 192},    {1, 2, 4, 4, 48, 32}, {1, 1, 3, 7, 12, 128}};

gpu_test::Pass norm_pass(const QkNormVariant& v, const ParamValues& p,
                         const std::vector<at::Tensor>& in3, int64_t heads, const at::Tensor& seed,
                         bool autocast) {
  trainer::AutocastScope scope({autocast, at::kBFloat16});
  return gpu_test::run_single(
      [&](const std::vector<at::Tensor>& in) {
        return v.run({in[0], in[1], 1e-6, in[2], heads}, p);
      },
      in3, {true, true, false}, seed);
}

std::vector<std::pair<at::ScalarType, bool>> dtype_cases() {
  return {{at::kFloat, false}, {at::kBFloat16, false}, {at::kBFloat16, true}};
}

std::string label(const ParamValues& p, at::ScalarType dtype, bool autocast,
                  const std::string& shape) {
  return "QKNORM " + gpu_test::str(p) + c10::toString(dtype) + (autocast ? " autocast " : " ") +
         shape;
}

TEST(KernelsQkNorm, NormEveryVariantMatchesPlainBitwise) {
  const auto params = gpu_test::fused_params("QKNORM", fused_qk_norm());
  ASSERT_FALSE(params.empty());
  const gpu_test::SweepScope scope(31);
  for (const auto& s : kNormShapes) {
    for (auto [dtype, autocast] : dtype_cases()) {
      auto opts = at::TensorOptions().device(cuda0());
      auto x = (at::randn({s.b, s.seq, s.channels}, opts) * 2 + 0.25).to(dtype);
      auto w = at::randn({s.channels}, opts) * 0.5 + 1;
      auto seed = gpu_test::random_like_with_zeros({s.b, s.seq, s.channels}, at::kFloat, cuda0());
      const std::vector<at::Tensor> in{x, w, at::Tensor()};
      const auto ref = norm_pass(plain_qk_norm(), {}, in, 1, seed, autocast);
      for (const auto& p : params) {
        const auto what = label(p, dtype, autocast, "C=" + std::to_string(s.channels));
        ASSERT_EQ(fused_qk_norm()->can_implement(qk_norm_problem({x, w, 1e-6, at::Tensor(), 1}), p),
                  Status::kSuccess)
            << what;
        gpu_test::expect_same(ref, norm_pass(*fused_qk_norm(), p, in, 1, seed, autocast), what);
      }
    }
  }
}

// The one-pass forward with the mean of squares in ATen's reduction order (qk_norm_rows.cu)
// at the edges of where it applies (16 rows; C = 128, 1536 in registers, 1540 and 8160 read
// twice; rows with values far from zero) and just outside them (15 rows, C = 124: ATen's
// mean on the squares), bit for bit with plain; for two warps a row also C = 1000 (warp 1
// holds vectors for some lanes only), 640 (none: warp 0's partial sums are the row's) and 21
// rows (a partial last block).
TEST(KernelsQkNorm, RowPassInAtenOrderMatchesPlainBitwise) {
  const gpu_test::SweepScope scope(33);
  const auto opts = at::TensorOptions().device(cuda0());
  struct Case {
    RowShape shape;
    double offset;
    bool applies;
  };
  for (const auto& k : std::vector<Case>{{{2, 1280, 1536}, 0.25, true},
                                         {{1, 16, 128}, 0.25, true},
                                         {{2, 8, 1536}, 0.25, true},
                                         {{3, 7, 1536}, 0.25, true},
                                         {{2, 9, 1000}, 0.25, true},
                                         {{2, 8, 640}, 0.25, true},
                                         {{2, 8, 1540}, 0.25, true},
                                         {{2, 8, 8160}, 0.25, true},
                                         {{4, 9, 1536}, 40.0, true},
                                         {{1, 15, 1536}, 0.25, false},
                                         {{2, 16, 124}, 0.25, false}}) {
    const auto& s = k.shape;
    for (auto [dtype, autocast] : dtype_cases()) {
      auto x = (at::randn({s.b, s.seq, s.channels}, opts) * 2 + k.offset).to(dtype);
      auto w = at::randn({s.channels}, opts) * 0.5 + 1;
      EXPECT_EQ(cuda::rms_norm_rows_applies(x, w), k.applies) << s.seq << "x" << s.channels;
      auto seed = gpu_test::random_like_with_zeros({s.b, s.seq, s.channels}, at::kFloat, cuda0());
      const std::vector<at::Tensor> in{x, w, at::Tensor()};
      const auto ref = norm_pass(plain_qk_norm(), {}, in, 1, seed, autocast);
      for (const auto& p : legal_params(family("QKNORM"))) {
        gpu_test::expect_same(
            ref, norm_pass(*fused_qk_norm(), p, in, 1, seed, autocast),
            label(p, dtype, autocast,
                  "row pass " + std::to_string(s.b * s.seq) + "x" + std::to_string(s.channels)));
      }
    }
  }
}

TEST(KernelsQkNorm, NormRopeEveryVariantMatchesPlainBitwise) {
  const auto params = legal_params(family("QKNORM"));
  const gpu_test::SweepScope scope(32);
  for (const auto& s : kRopeShapes) {
    const int64_t seq = s.f * s.h * s.w, c = s.heads * s.head_dim;
    auto table = rope3d_table(s.f, s.h, s.w, s.head_dim, 10000.0, cuda0());
    for (auto [dtype, autocast] : dtype_cases()) {
      auto opts = at::TensorOptions().device(cuda0());
      auto x = (at::randn({s.b, seq, c}, opts) * 2 - 0.25).to(dtype);
      auto w = at::randn({c}, opts) * 0.5 + 1;
      auto seed =
          gpu_test::random_like_with_zeros({s.b, seq, s.heads, s.head_dim}, at::kFloat, cuda0());
      const std::vector<at::Tensor> in{x, w, table};
      const auto ref = norm_pass(plain_qk_norm(), {}, in, s.heads, seed, autocast);
      ASSERT_EQ(ref.outputs[0].sizes(), seed.sizes());
      for (const auto& p : params) {
        const auto what =
            label(p, dtype, autocast,
                  "rope heads=" + std::to_string(s.heads) + " hd=" + std::to_string(s.head_dim));
        ASSERT_EQ(fused_qk_norm()->can_implement(qk_norm_problem({x, w, 1e-6, table, s.heads}), p),
                  Status::kSuccess)
            << what;
        gpu_test::expect_same(ref, norm_pass(*fused_qk_norm(), p, in, s.heads, seed, autocast),
                              what);
      }
    }
  }
}

TEST(KernelsQkNorm, CanImplementRefusesWhatItCannotRun) {
  const auto& v = *fused_qk_norm();
  const ParamValues p = family("QKNORM").defaults;
  auto opts = at::TensorOptions().device(cuda0());
  auto x = at::randn({2, 6, 8}, opts);
  auto w = at::randn({8}, opts);
  auto table = rope3d_table(1, 2, 3, 8, 10000.0, cuda0());
  EXPECT_EQ(v.can_implement(qk_norm_problem({x, w, 1e-6, at::Tensor(), 1}), p), Status::kSuccess);
  EXPECT_EQ(v.can_implement(qk_norm_problem({x, w, 1e-6, table, 1}), p), Status::kSuccess);
  EXPECT_NE(v.can_implement(qk_norm_problem({x.to(at::kHalf), w, 1e-6, at::Tensor(), 1}), p),
            Status::kSuccess);
  EXPECT_NE(v.can_implement(qk_norm_problem({x.transpose(0, 1), w, 1e-6, at::Tensor(), 1}), p),
            Status::kSuccess);
  EXPECT_NE(v.can_implement(qk_norm_problem({x, w.to(at::kBFloat16), 1e-6, at::Tensor(), 1}), p),
            Status::kSuccess);
  EXPECT_NE(v.can_implement(qk_norm_problem({x.cpu(), w.cpu(), 1e-6, at::Tensor(), 1}), p),
            Status::kSuccess);
  EXPECT_NE(v.can_implement(qk_norm_problem({x, w, 1e-6, table, 3}), p),
            Status::kSuccess);  // 8 % 3 != 0
  EXPECT_NE(v.can_implement(qk_norm_problem({x, w, 1e-6, table.to(at::kFloat), 1}), p),
            Status::kSuccess);
  EXPECT_NE(v.can_implement(qk_norm_problem({x.view({2, 6, 2, 4}), w, 1e-6, at::Tensor(), 1}), p),
            Status::kSuccess);
}

TEST(KernelsQkNorm, FirstCallChecksPassUnderAutocastThenFallBackOnInjectedMismatch) {
  testing::reset_first_call_checks();
  select_kernels({{{"ROPE", true}, {"QKNORM", true}}, {{"QKNORM", "threads=512,vec=4"}}});
  auto opts = at::TensorOptions().device(cuda0());
  auto x = at::randn({2, 1280, 1536}, opts).to(at::kBFloat16);
  auto w = at::randn({1536}, opts);
  auto table = rope3d_table(5, 16, 16, 128, 10000.0, cuda0());
  {
    trainer::AutocastScope scope({true, at::kBFloat16});
    auto n = rms_norm(x, w, 1e-6);
    auto q = rms_norm_rope(x, w, 1e-6, table, 12);
    EXPECT_TRUE(fallen_back_families().empty());
    EXPECT_TRUE(bitwise_equal(n, rms_norm_reference(x, w, 1e-6)));
    EXPECT_TRUE(bitwise_equal(q, rms_norm_rope_reference(x, w, 1e-6, table, 12)));
  }
  testing::reset_first_call_checks();
  testing::inject_first_call_mismatch("QKNORM");
  ::testing::internal::CaptureStderr();
  auto n = rms_norm(x, w, 1e-6);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("QKNORM"), std::string::npos) << err;
  EXPECT_EQ(fallen_back_families(), std::vector<std::string>{"QKNORM"});
  EXPECT_TRUE(bitwise_equal(n, rms_norm_reference(x, w, 1e-6)));
  // Fallen back: the video q/k path runs the two ops (ROPE still fused) and stays exact.
  EXPECT_TRUE(bitwise_equal(rms_norm_rope(x, w, 1e-6, table, 12),
                            rms_norm_rope_reference(x, w, 1e-6, table, 12)));
  select_kernels({});
  testing::reset_first_call_checks();
}

}  // namespace
}  // namespace sg::kernels
