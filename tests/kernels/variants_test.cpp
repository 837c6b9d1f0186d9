// Every kernel variant against the reference ops (the plain variants today; fused CUDA
// variants join when they exist), plus the registry's parameter parsing and constraints.
#include "kernels/reference/reference_ops.hpp"
#include "kernels/registry/families.hpp"

#include <gtest/gtest.h>

namespace sg::kernels {
namespace {

TEST(Rope3d, TableSplitsFrameHeightWidth) {
  auto t = rope3d_table(3, 2, 2, /*head_dim=*/12, 10000.0, at::kCPU);
  EXPECT_EQ(t.sizes(), (std::vector<int64_t>{12, 6, 2}));
  EXPECT_EQ(t.scalar_type(), at::kDouble);
  // Token 0 (f=0,h=0,w=0) has zero angles: cos 1, sin 0.
  EXPECT_TRUE(at::allclose(t[0].select(-1, 0), at::ones({6}, at::kDouble)));
  // Tokens differing only in width differ only in the width pairs (last c/3 = 2).
  auto d = (t[1] - t[0]).abs().sum(-1);
  EXPECT_EQ(d.narrow(0, 0, 4).sum().item<double>(), 0.0);
  EXPECT_GT(d.narrow(0, 4, 2).sum().item<double>(), 0.0);
}

TEST(Rope3d, RotationPreservesPairNormsAndInverts) {
  at::manual_seed(0);
  auto x = at::randn({2, 12, 3, 12});
  auto table = rope3d_table(3, 2, 2, 12, 10000.0, at::kCPU);
  auto y = rope3d_apply_reference(x, table);
  auto nx = x.view({2, 12, 3, 6, 2}).pow(2).sum(-1);
  auto ny = y.view({2, 12, 3, 6, 2}).pow(2).sum(-1);
  EXPECT_TRUE(at::allclose(nx, ny, 1e-5, 1e-5));
  auto inverse = table.clone();
  inverse.select(-1, 1).neg_();
  EXPECT_TRUE(at::allclose(rope3d_apply_reference(y, inverse), x, 1e-5, 1e-5));
}

TEST(Variants, PlainVariantsMatchReferenceBitwise) {
  at::manual_seed(1);
  const ParamValues none;
  auto x = at::randn({2, 12, 3, 12});
  auto table = rope3d_table(3, 2, 2, 12, 10000.0, at::kCPU);
  EXPECT_EQ(plain_rope().can_implement({{2, 12, 3, 12}}, none), Status::kSuccess);
  EXPECT_EQ(plain_rope().can_implement({{2, 12, 3}}, none), Status::kErrorInvalidProblem);
  EXPECT_TRUE(at::equal(plain_rope().run({x, table}, none), rope3d_apply_reference(x, table)));

  auto v = at::randn({2, 5, 8}), a = at::randn({2, 3, 8});
  auto joint = plain_cat().run({v, a}, none);
  EXPECT_TRUE(at::equal(joint, joint_cat_reference(v, a)));
  auto [sv, sa] = plain_cat().split(joint, 5, none);
  EXPECT_TRUE(at::equal(sv, v));
  EXPECT_TRUE(at::equal(sa, a));

  auto shift = at::randn({2, 1, 8}), scale = at::randn({2, 1, 8}), gate = at::randn({2, 1, 8});
  EXPECT_TRUE(at::equal(plain_adaln().run({v, shift, scale, 1e-6}, none), adaln_modulate_reference(v, shift, scale, 1e-6)));
  EXPECT_TRUE(at::equal(plain_adaln().gated_residual(v, v, gate, none), gated_residual_reference(v, v, gate)));
}

TEST(Registry, FamiliesDescribeParametersAndAvailability) {
  ASSERT_EQ(families().size(), 3u);
  for (const auto& f : families()) {
    EXPECT_EQ(f.env, "SG_KERNEL_" + f.name);
    EXPECT_FALSE(f.parameters.empty());
    EXPECT_EQ(f.variants.front(), "plain_aten");
    EXPECT_EQ(f.available, f.unavailable_reason.empty());
#if !SPEEDGATE_WITH_CUDA
    EXPECT_FALSE(f.available) << f.name;
#endif
  }
  EXPECT_THROW(family("NOPE"), std::invalid_argument);
}

TEST(Registry, ParsesParametersAndChecksConstraints) {
  const auto& rope = family("ROPE");
  ParamValues p;
  EXPECT_EQ(parse_params(rope, "threads=128,vec=2", &p), "");
  EXPECT_EQ(p.at("threads"), 128);
  EXPECT_NE(parse_params(rope, "threads=100", nullptr), "");
  EXPECT_NE(parse_params(rope, "blocks=1", nullptr), "");
  EXPECT_NE(parse_params(rope, "threads", nullptr), "");
  EXPECT_EQ(parse_params(rope, "threads=256,vec=4", nullptr), "");
  const auto& adaln = family("ADALN");
  EXPECT_EQ(parse_params(adaln, "threads=512,vec=4", nullptr), "");
  EXPECT_NE(parse_params(family("CAT"), "threads=512,rows_per_block=4", nullptr).find("constraint"), std::string::npos);
  EXPECT_EQ(std::string(to_string(Status::kErrorConstraint)), "constraint_violated");
}

}  // namespace
}  // namespace sg::kernels
