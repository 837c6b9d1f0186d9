// ROPE's fused CUDA variant against the plain variant, bit for bit, forward and autograd
// backward: every legal parameter combination, base and odd shapes, float32 / bf16 (and
// fp16 / float64 on the small shapes), poisoned outputs. Plus the dispatch's first-call
// check: it passes with the real kernel and falls back on an injected mismatch.
#include "kernels/rope/rope.hpp"
#include "tests/gpu/kernels_test_util.hpp"

namespace sg::kernels {
namespace {

using gpu_test::cuda0;

struct RopeShape {
  int64_t b, frames, height, width, heads, head_dim;
};

// base: 5x16x16 video tokens, 12 heads x 128; then odd ones (one token, pairs not a
// multiple of the vector width, more heads than pairs).
const std::vector<RopeShape> kShapes = {
    {2, 5, 16, 16, 12, 128}, {1, 1, 1, 1, 1, 6},  {3, 2, 3, 5, 3, 14},
    {2, 1, 3, 3, 7, 22},     {1, 3, 1, 1, 2, 10},
};

gpu_test::Pass rope_pass(const RopeVariant& v, const ParamValues& p, const at::Tensor& x,
                         const at::Tensor& table, const at::Tensor& seed) {
  return gpu_test::run_main_op(v, p, {x, table}, {true, false}, seed);
}

TEST(KernelsRope, EveryVariantMatchesPlainBitwise) {
  const auto params = gpu_test::fused_params("ROPE", fused_rope());
  ASSERT_FALSE(params.empty());
  const gpu_test::SweepScope scope(11);
  for (const auto& s : kShapes) {
    const int64_t seq = s.frames * s.height * s.width;
    auto table = rope3d_table(s.frames, s.height, s.width, s.head_dim, 10000.0, cuda0());
    const bool small = seq * s.heads * s.head_dim < 100000;
    std::vector<at::ScalarType> dtypes{at::kFloat, at::kBFloat16};
    if (small) dtypes.insert(dtypes.end(), {at::kHalf, at::kDouble});
    for (auto dtype : dtypes) {
      auto x =
          gpu_test::random_like_with_zeros({s.b, seq, s.heads, s.head_dim}, dtype, cuda0()) * 4;
      auto seed = gpu_test::random_like_with_zeros(x.sizes(), dtype, cuda0());
      const auto ref = rope_pass(plain_rope(), {}, x, table, seed);
      for (const auto& p : params) {
        const auto problem = rope_problem({x, table});
        ASSERT_EQ(fused_rope()->can_implement(problem, p), Status::kSuccess) << gpu_test::str(p);
        const auto got = rope_pass(*fused_rope(), p, x, table, seed);
        gpu_test::expect_same(
            ref, got,
            "ROPE " + gpu_test::str(p) + c10::toString(dtype) + " S=" + std::to_string(seq));
      }
    }
  }
}

TEST(KernelsRope, CanImplementRefusesWhatItCannotRun) {
  const auto& v = *fused_rope();
  const ParamValues p = family("ROPE").defaults;
  auto table = rope3d_table(2, 2, 2, 12, 10000.0, cuda0());
  auto x = at::randn({2, 8, 3, 12}, at::TensorOptions().device(cuda0()));
  EXPECT_EQ(v.can_implement(rope_problem({x, table}), p), Status::kSuccess);
  EXPECT_NE(v.can_implement(rope_problem({x.transpose(1, 2), table}), p), Status::kSuccess);
  EXPECT_NE(v.can_implement(rope_problem({x.cpu(), table.cpu()}), p), Status::kSuccess);
  EXPECT_NE(v.can_implement(rope_problem({x.to(at::kInt), table}), p), Status::kSuccess);
  EXPECT_NE(v.can_implement(rope_problem({x, table.to(at::kFloat)}), p), Status::kSuccess);
  auto flat = at::randn({1 + x.numel()}, x.options());
  EXPECT_NE(v.can_implement(rope_problem({flat.narrow(0, 1, x.numel()).view(x.sizes()), table}), p),
            Status::kSuccess);
  EXPECT_EQ(v.can_implement(rope_problem({x, table}), {{"threads", 100}, {"vec", 2}}),
            Status::kErrorConstraint);
  // Through the dispatch, a non-contiguous x runs plain and still matches.
  select_kernels({{{"ROPE", true}}, {}});
  auto xt = x.transpose(1, 2).contiguous().transpose(1, 2);
  EXPECT_TRUE(bitwise_equal(rope_apply(xt, table), rope3d_apply_reference(xt, table)));
  select_kernels({});
}

TEST(KernelsRope, FirstCallCheckPassesWithTheRealKernel) {
  testing::reset_first_call_checks();
  select_kernels({{{"ROPE", true}}, {{"ROPE", "threads=128,vec=4"}}});
  auto table = rope3d_table(5, 16, 16, 128, 10000.0, cuda0());
  auto x = at::randn({2, 1280, 12, 128}, at::TensorOptions().device(cuda0())).requires_grad_(true);
  auto y = rope_apply(x, table);
  EXPECT_TRUE(fallen_back_families().empty());
  EXPECT_TRUE(bitwise_equal(y.detach(), rope3d_apply_reference(x.detach(), table)));
  select_kernels({});
  testing::reset_first_call_checks();
}

TEST(KernelsRope, FirstCallMismatchFallsBackToPlain) {
  testing::reset_first_call_checks();
  select_kernels({{{"ROPE", true}}, {}});
  testing::inject_first_call_mismatch("ROPE");
  auto table = rope3d_table(2, 4, 4, 12, 10000.0, cuda0());
  auto x = at::randn({1, 32, 2, 12}, at::TensorOptions().device(cuda0()));
  ::testing::internal::CaptureStderr();
  auto y = rope_apply(x, table);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("ROPE"), std::string::npos) << err;
  EXPECT_EQ(fallen_back_families(), std::vector<std::string>{"ROPE"});
  EXPECT_TRUE(bitwise_equal(y, rope3d_apply_reference(x, table)));
  select_kernels({});
  testing::reset_first_call_checks();
}

}  // namespace
}  // namespace sg::kernels
