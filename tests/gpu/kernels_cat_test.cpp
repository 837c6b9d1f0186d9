// CAT's fused CUDA variant against the plain variant, bit for bit: the [video; action]
// concatenation and the split, forward and autograd backward (the split's backward with
// both grads, with one missing, and with signed zeros), every legal parameter combination,
// base and odd shapes (rows whose bytes are not a multiple of 16, misaligned operands),
// float32 / bf16, poisoned outputs; plus the first-call check and its fallback.
#include "kernels/cat/cat.hpp"
#include "tests/gpu/kernels_test_util.hpp"

namespace sg::kernels {
namespace {

using gpu_test::cuda0;

struct CatShape {
  int64_t b, video, action, channels;
};

// base q/k/v: 1280 video + 16 action tokens, 12 x 128 channels; then odd ones.
const std::vector<CatShape> kShapes = {
    {2, 1280, 16, 1536}, {1, 1, 1, 1}, {3, 7, 2, 33}, {2, 5, 3, 1023}, {1, 2, 9, 6},
};

gpu_test::Pass cat_pass(const CatVariant& v, const ParamValues& p, const at::Tensor& video,
                        const at::Tensor& action, const at::Tensor& seed) {
  return gpu_test::run_main_op(v, p, {video, action}, {true, true}, seed);
}

gpu_test::Pass split_pass(const CatVariant& v, const ParamValues& p, const at::Tensor& joint,
                          int64_t video_len, const at::Tensor& seed_v, const at::Tensor& seed_a) {
  return gpu_test::run_pass(
      [&](const std::vector<at::Tensor>& in) {
        auto [a, b] = v.split(in[0], video_len, p);
        return std::vector<at::Tensor>{a, b};
      },
      {joint}, {true}, {seed_v, seed_a});
}

TEST(KernelsCat, EveryVariantMatchesPlainBitwise) {
  const auto params = gpu_test::fused_params("CAT", fused_cat());
  ASSERT_FALSE(params.empty());
  const gpu_test::SweepScope scope(12);
  for (const auto& s : kShapes) {
    for (auto dtype : {at::kFloat, at::kBFloat16}) {
      auto video = gpu_test::random_like_with_zeros({s.b, s.video, s.channels}, dtype, cuda0());
      auto action = gpu_test::random_like_with_zeros({s.b, s.action, s.channels}, dtype, cuda0());
      auto joint =
          gpu_test::random_like_with_zeros({s.b, s.video + s.action, s.channels}, dtype, cuda0());
      auto seed_j = gpu_test::random_like_with_zeros(joint.sizes(), dtype, cuda0());
      auto seed_v = gpu_test::random_like_with_zeros(video.sizes(), dtype, cuda0());
      auto seed_a = gpu_test::random_like_with_zeros(action.sizes(), dtype, cuda0());
      const auto ref_cat = cat_pass(plain_cat(), {}, video, action, seed_j);
      const auto ref_split = split_pass(plain_cat(), {}, joint, s.video, seed_v, seed_a);
      const auto ref_split_v = split_pass(plain_cat(), {}, joint, s.video, seed_v, at::Tensor());
      const auto ref_split_a = split_pass(plain_cat(), {}, joint, s.video, at::Tensor(), seed_a);
      for (const auto& p : params) {
        const std::string what =
            "CAT " + gpu_test::str(p) + c10::toString(dtype) + " C=" + std::to_string(s.channels);
        ASSERT_EQ(fused_cat()->can_implement(cat_problem({video, action}), p), Status::kSuccess)
            << what;
        ASSERT_EQ(fused_cat()->can_implement(split_problem(joint, s.video), p), Status::kSuccess)
            << what;
        gpu_test::expect_same(ref_cat, cat_pass(*fused_cat(), p, video, action, seed_j),
                              what + " cat");
        gpu_test::expect_same(ref_split,
                              split_pass(*fused_cat(), p, joint, s.video, seed_v, seed_a),
                              what + " split");
        gpu_test::expect_same(ref_split_v,
                              split_pass(*fused_cat(), p, joint, s.video, seed_v, at::Tensor()),
                              what + " split, action grad missing");
        gpu_test::expect_same(ref_split_a,
                              split_pass(*fused_cat(), p, joint, s.video, at::Tensor(), seed_a),
                              what + " split, video grad missing");
      }
    }
  }
}

TEST(KernelsCat, MisalignedOperandsUseNarrowerCopies) {
  gpu_test::PoisonOutputs poison;
  const auto p = family("CAT").defaults;
  for (auto dtype : {at::kFloat, at::kBFloat16}) {
    // Contiguous views starting one element into their storage: 4- or 2-byte aligned.
    auto buf_v = at::randn({1 + 2 * 9 * 64}, at::TensorOptions().device(cuda0())).to(dtype);
    auto buf_a = at::randn({3 + 2 * 4 * 64}, at::TensorOptions().device(cuda0())).to(dtype);
    auto video = buf_v.narrow(0, 1, 2 * 9 * 64).view({2, 9, 64});
    auto action = buf_a.narrow(0, 3, 2 * 4 * 64).view({2, 4, 64});
    ASSERT_EQ(fused_cat()->can_implement(cat_problem({video, action}), p), Status::kSuccess);
    auto seed = at::randn({2, 13, 64}, video.options());
    gpu_test::expect_same(cat_pass(plain_cat(), {}, video, action, seed),
                          cat_pass(*fused_cat(), p, video, action, seed),
                          std::string("misaligned ") + c10::toString(dtype));
  }
}

TEST(KernelsCat, CanImplementRefusesWhatItCannotRun) {
  const auto& v = *fused_cat();
  const ParamValues p = family("CAT").defaults;
  auto video = at::randn({2, 5, 8}, at::TensorOptions().device(cuda0()));
  auto action = at::randn({2, 3, 8}, video.options());
  EXPECT_EQ(v.can_implement(cat_problem({video, action}), p), Status::kSuccess);
  EXPECT_NE(v.can_implement(cat_problem({video, action.to(at::kBFloat16)}), p), Status::kSuccess);
  EXPECT_NE(v.can_implement(cat_problem({video.transpose(0, 1), action}), p), Status::kSuccess);
  EXPECT_NE(v.can_implement(cat_problem({video.cpu(), action.cpu()}), p), Status::kSuccess);
  EXPECT_NE(v.can_implement(split_problem(video, 0), p), Status::kSuccess);
  EXPECT_EQ(
      v.can_implement(cat_problem({video, action}), {{"threads", 512}, {"rows_per_block", 4}}),
      Status::kErrorConstraint);
}

TEST(KernelsCat, FirstCallCheckPassesThenFallsBackOnInjectedMismatch) {
  testing::reset_first_call_checks();
  select_kernels({{{"CAT", true}}, {{"CAT", "threads=512,rows_per_block=2"}}});
  auto video = at::randn({2, 1280, 1536}, at::TensorOptions().device(cuda0())).requires_grad_(true);
  auto action = at::randn({2, 16, 1536}, video.options()).requires_grad_(true);
  auto joint = joint_cat(video, action);
  auto parts = joint_split(joint, 1280);
  EXPECT_TRUE(fallen_back_families().empty());
  EXPECT_TRUE(bitwise_equal(parts.second.detach(), action.detach()));

  testing::reset_first_call_checks();
  testing::inject_first_call_mismatch("CAT");
  ::testing::internal::CaptureStderr();
  auto j2 = joint_cat(video.detach(), action.detach());
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("CAT"), std::string::npos) << err;
  EXPECT_EQ(fallen_back_families(), std::vector<std::string>{"CAT"});
  EXPECT_TRUE(bitwise_equal(j2, joint_cat_reference(video.detach(), action.detach())));
  select_kernels({});
  testing::reset_first_call_checks();
}

}  // namespace
}  // namespace sg::kernels
