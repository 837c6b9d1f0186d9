// Kernel op dispatch (kernels/common/dispatch.hpp) on the CPU: selection and parameter
// errors, plain when unselected or when can_implement says no, and the first-call check
// with its fallback, exercised through test variants standing in for the CUDA ones.
#include "kernels/adaln/adaln.hpp"
#include "kernels/cat/cat.hpp"
#include "kernels/common/dispatch.hpp"
#include "kernels/qk_norm/qk_norm.hpp"
#include "kernels/rope/rope.hpp"

#include <gtest/gtest.h>

#include <atomic>

namespace sg::kernels {
namespace {

// A stand-in "fused" ROPE variant: the plain rotation, optionally off by one ulp.
class TestRope final : public RopeVariant {
 public:
  explicit TestRope(bool wrong) : wrong_(wrong) {}
  std::string name() const override { return wrong_ ? "test_wrong" : "test_exact"; }
  Status can_implement(const Problem& p, const ParamValues&) const override {
    return p.contiguous && p.operands_match && p.dtype == at::kFloat ? Status::kSuccess
                                                                     : Status::kErrorNotSupported;
  }
  at::Tensor run(const RopeArgs& args, const ParamValues&) const override {
    ++calls;
    auto y = rope3d_apply_reference(args.x, args.table);
    return wrong_ ? at::nextafter(y, at::full_like(y, 1e30)) : y;
  }
  mutable std::atomic<int> calls{0};

 private:
  bool wrong_;
};

class TestCat final : public CatVariant {
 public:
  std::string name() const override { return "test_cat"; }
  Status can_implement(const Problem& p, const ParamValues&) const override {
    return p.operands_match ? Status::kSuccess : Status::kErrorNotSupported;
  }
  at::Tensor run(const CatArgs& a, const ParamValues&) const override {
    ++calls;
    return at::cat({a.video, a.action}, 1);
  }
  std::pair<at::Tensor, at::Tensor> split(const at::Tensor& j, int64_t n,
                                          const ParamValues&) const override {
    ++calls;
    return {j.narrow(1, 0, n).clone(),
            j.narrow(1, n, j.size(1) - n).clone()};  // clone: grads still match
  }
  mutable std::atomic<int> calls{0};
};

// A stand-in QKNORM variant: the plain composite (with or without the rotation),
// optionally off by one ulp; counts calls with and without a table.
class TestQkNorm final : public QkNormVariant {
 public:
  explicit TestQkNorm(bool wrong) : wrong_(wrong) {}
  std::string name() const override { return "test_qk_norm"; }
  Status can_implement(const Problem& p, const ParamValues&) const override {
    return p.operands_match && p.dtype == at::kFloat ? Status::kSuccess
                                                     : Status::kErrorNotSupported;
  }
  at::Tensor run(const QkNormArgs& a, const ParamValues&) const override {
    ++(a.table.defined() ? rope_calls : norm_calls);
    auto y = plain_qk_norm().run(a, {});
    return wrong_ ? at::nextafter(y, at::full_like(y, 1e30)) : y;
  }
  mutable std::atomic<int> norm_calls{0}, rope_calls{0};

 private:
  bool wrong_;
};

class KernelOps : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const auto& f : families()) testing::override_fused(f.name, nullptr);
    select_kernels({});
    testing::reset_first_call_checks();
  }

  // Selects `family` alone, with `variant` standing in for its fused variant.
  static void select_stand_in(const std::string& family, const Variant* variant) {
    testing::override_fused(family, variant);
    KernelSelection sel;
    sel.fused[family] = true;
    select_kernels(sel);
  }
};

TEST_F(KernelOps, UnselectedFamiliesRunPlain) {
  select_kernels({});
  auto x = at::randn({1, 4, 2, 6});
  auto table = rope3d_table(1, 2, 2, 6, 10000.0, at::kCPU);
  EXPECT_TRUE(bitwise_equal(rope_apply(x, table), rope3d_apply_reference(x, table)));
  auto v = at::randn({2, 3, 4}), a = at::randn({2, 1, 4});
  EXPECT_TRUE(bitwise_equal(joint_cat(v, a), joint_cat_reference(v, a)));
  auto s = joint_split(joint_cat(v, a), 3);
  EXPECT_TRUE(bitwise_equal(s.first, v));
  auto mod = at::randn({2, 6, 4}).chunk(6, 1);
  EXPECT_TRUE(bitwise_equal(adaln_modulate(v, mod[0], mod[1], 1e-6),
                            adaln_modulate_reference(v, mod[0], mod[1], 1e-6)));
  EXPECT_TRUE(bitwise_equal(gated_residual(v, v, mod[2]), gated_residual_reference(v, v, mod[2])));
}

#if !SPEEDGATE_WITH_CUDA
TEST_F(KernelOps, SelectingAFamilyWithoutFusedVariantIsAnError) {
  KernelSelection sel;
  sel.fused["ROPE"] = true;
  EXPECT_THROW(select_kernels(sel), std::invalid_argument);
}
#endif

TEST_F(KernelOps, SelectionIsKeyedByFamilyNameAndRefusesUnknownOnes) {
  KernelSelection sel;
  sel.fused["NO_SUCH_FAMILY"] = true;
  try {
    select_kernels(sel);
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("NO_SUCH_FAMILY"), std::string::npos) << e.what();
  }
  TestCat cat;
  testing::override_fused("CAT", &cat);
  sel.fused = {{"ROPE", false}, {"CAT", true}};  // an explicit false is plain, as absent
  ASSERT_NO_THROW(select_kernels(sel));
  auto v = at::randn({2, 3, 4}), a = at::randn({2, 1, 4});
  joint_cat(v, a);
  EXPECT_GE(cat.calls.load(), 1);
}

TEST_F(KernelOps, BadParametersNameTheFamily) {
  TestRope exact(false);
  TestCat cat;
  testing::override_fused("ROPE", &exact);
  testing::override_fused("CAT", &cat);
  KernelSelection sel;
  sel.fused["CAT"] = true;
  sel.params["CAT"] = "threads=512,rows_per_block=4";
  try {
    select_kernels(sel);
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("SG_KERNEL_CAT"), std::string::npos) << e.what();
  }
  sel.params["CAT"] = "threads=128";
  EXPECT_NO_THROW(select_kernels(sel));
}

TEST_F(KernelOps, ExactFusedVariantPassesFirstCallAndIsUsed) {
  TestRope exact(false);
  select_stand_in("ROPE", &exact);
  auto table = rope3d_table(2, 2, 2, 12, 10000.0, at::kCPU);
  auto x = at::randn({2, 8, 3, 12}).requires_grad_(true);
  auto y = rope_apply(x, table);
  EXPECT_GE(exact.calls.load(), 2);  // the first-call comparison and the call itself
  EXPECT_TRUE(bitwise_equal(y.detach(), rope3d_apply_reference(x.detach(), table)));
  const int before = exact.calls.load();
  rope_apply(x, table);
  EXPECT_EQ(exact.calls.load(), before + 1);  // checked once per process
  EXPECT_TRUE(fallen_back_families().empty());
  // A problem the variant cannot implement (double) runs plain.
  rope_apply(x.detach().to(at::kDouble), table);
  EXPECT_EQ(exact.calls.load(), before + 1);
}

TEST_F(KernelOps, DifferingFusedVariantFallsBackToPlainOnFirstCall) {
  TestRope wrong(true);
  select_stand_in("ROPE", &wrong);
  auto table = rope3d_table(2, 2, 2, 12, 10000.0, at::kCPU);
  auto x = at::randn({1, 8, 2, 12});
  ::testing::internal::CaptureStderr();
  auto y = rope_apply(x, table);
  auto y2 = rope_apply(x, table);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(bitwise_equal(y, rope3d_apply_reference(x, table)));
  EXPECT_TRUE(bitwise_equal(y2, rope3d_apply_reference(x, table)));
  EXPECT_EQ(fallen_back_families(), std::vector<std::string>{"ROPE"});
  EXPECT_NE(err.find("ROPE"), std::string::npos);
  EXPECT_EQ(err.find("ROPE", err.find("ROPE") + 1), std::string::npos) << "logged once: " << err;
}

TEST_F(KernelOps, InjectedMismatchFallsBackAndCatSplitAreCheckedSeparately) {
  TestCat cat;
  select_stand_in("CAT", &cat);
  auto v = at::randn({2, 3, 4}).requires_grad_(true), a = at::randn({2, 2, 4}).requires_grad_(true);
  auto joint = joint_cat(v, a);
  EXPECT_TRUE(fallen_back_families().empty());
  testing::inject_first_call_mismatch("CAT");
  ::testing::internal::CaptureStderr();
  auto parts = joint_split(joint, 3);  // split's own first call sees the injected mismatch
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("split"), std::string::npos) << err;
  EXPECT_EQ(fallen_back_families(), std::vector<std::string>{"CAT"});
  EXPECT_TRUE(bitwise_equal(parts.first, v.detach()));
  const int before = cat.calls.load();
  joint_cat(v, a);
  EXPECT_EQ(cat.calls.load(), before) << "a fallen-back family stays plain";
}

TEST_F(KernelOps, QkNormRunsFusedAndNormRopeNeedsRopeSelectedToo) {
  TestQkNorm exact(false);
  TestRope rope(false);
  testing::override_fused("ROPE", &rope);
  testing::override_fused("QKNORM", &exact);
  auto table = rope3d_table(1, 2, 3, 8, 10000.0, at::kCPU);
  auto x = at::randn({2, 6, 16}).requires_grad_(true);
  auto w = at::randn({16}).requires_grad_(true);
  const auto ref = rms_norm_rope_reference(x.detach(), w.detach(), 1e-6, table, 2);
  KernelSelection sel;
  sel.fused["QKNORM"] = true;
  select_kernels(sel);
  EXPECT_TRUE(bitwise_equal(rms_norm(x, w, 1e-6).detach(),
                            rms_norm_reference(x.detach(), w.detach(), 1e-6)));
  EXPECT_GE(exact.norm_calls.load(), 2);  // first-call comparison and the call
  // Without ROPE selected the video q/k path is the two ops: the fused norm, plain rope.
  EXPECT_TRUE(bitwise_equal(rms_norm_rope(x, w, 1e-6, table, 2).detach(), ref));
  EXPECT_EQ(exact.rope_calls.load(), 0);
  EXPECT_EQ(rope.calls.load(), 0);
  sel.fused["ROPE"] = true;
  select_kernels(sel);
  EXPECT_TRUE(bitwise_equal(rms_norm_rope(x, w, 1e-6, table, 2).detach(), ref));
  EXPECT_GE(exact.rope_calls.load(), 2);
  EXPECT_EQ(rope.calls.load(), 0) << "one fused pass, no separate rotation";
  EXPECT_TRUE(fallen_back_families().empty());
  // The model's text encoder keeps a bf16 weight: not implementable, plain.
  const int before = exact.norm_calls.load();
  rms_norm(x.detach(), w.detach().to(at::kBFloat16), 1e-6);
  EXPECT_EQ(exact.norm_calls.load(), before);
}

TEST_F(KernelOps, DifferingQkNormFallsBackAndNormRopeThenComposesTheTwoOps) {
  TestQkNorm wrong(true);
  TestRope rope(false);
  testing::override_fused("ROPE", &rope);
  testing::override_fused("QKNORM", &wrong);
  KernelSelection sel;
  sel.fused["QKNORM"] = true;
  sel.fused["ROPE"] = true;
  select_kernels(sel);
  auto table = rope3d_table(1, 2, 3, 8, 10000.0, at::kCPU);
  auto x = at::randn({2, 6, 16}), w = at::randn({16});
  ::testing::internal::CaptureStderr();
  auto q = rms_norm_rope(x, w, 1e-6, table, 2);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("QKNORM (norm_rope)"), std::string::npos) << err;
  EXPECT_EQ(fallen_back_families(), std::vector<std::string>{"QKNORM"});
  EXPECT_TRUE(bitwise_equal(q, rms_norm_rope_reference(x, w, 1e-6, table, 2)));
  EXPECT_GE(rope.calls.load(), 1) << "the rotation still runs ROPE's variant";
  EXPECT_TRUE(bitwise_equal(rms_norm(x, w, 1e-6), rms_norm_reference(x, w, 1e-6)));
}

}  // namespace
}  // namespace sg::kernels
