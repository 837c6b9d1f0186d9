// Every kernel variant against the reference ops (the plain variants today; fused CUDA
// variants join when they exist), plus the registry's parameter parsing and constraints.
#include "kernels/adaln/adaln.hpp"
#include "kernels/cat/cat.hpp"
#include "kernels/common/dispatch.hpp"
#include "kernels/common/registry.hpp"
#include "kernels/qk_norm/qk_norm.hpp"
#include "kernels/rope/rope.hpp"

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
  EXPECT_TRUE(at::equal(plain_adaln().run({v, shift, scale, 1e-6}, none),
                        adaln_modulate_reference(v, shift, scale, 1e-6)));
  EXPECT_TRUE(at::equal(plain_adaln().gated_residual(v, v, gate, none),
                        gated_residual_reference(v, v, gate)));

  auto w = at::randn({8});
  EXPECT_TRUE(bitwise_equal(plain_qk_norm().run({v, w, 1e-6, at::Tensor(), 1}, none),
                            rms_norm_reference(v, w, 1e-6)));
  auto qt = rope3d_table(1, 1, 5, 8, 10000.0, at::kCPU);
  auto q = plain_qk_norm().run({v, w, 1e-6, qt, 1}, none);
  EXPECT_EQ(q.sizes(), (at::IntArrayRef{2, 5, 1, 8}));
  EXPECT_TRUE(bitwise_equal(
      q, rope3d_apply_reference(rms_norm_reference(v, w, 1e-6).view({2, 5, 1, 8}), qt)));
}

TEST(Variants, RmsNormReferenceIsWanRmsNorm) {
  at::manual_seed(4);
  auto x = at::randn({2, 3, 16}, at::kDouble);
  auto w = at::randn({16});
  auto y = rms_norm_reference(x.to(at::kBFloat16), w, 1e-6);
  EXPECT_EQ(y.scalar_type(), at::kFloat) << "bf16 normed times a float32 weight promotes";
  auto expect = x / at::sqrt(x.pow(2).mean(-1, true) + 1e-6) * w.to(at::kDouble);
  EXPECT_TRUE(at::allclose(y.to(at::kDouble), expect, 2e-2, 2e-2));
  // float64 x still normalizes in float32 (Wan's x.float()): float32 accuracy.
  auto y64 = rms_norm_reference(x, w.to(at::kDouble), 1e-6);
  EXPECT_EQ(y64.scalar_type(), at::kDouble);
  EXPECT_TRUE(at::allclose(y64, expect, 1e-5, 1e-5));
}

TEST(Registry, FamiliesDescribeParametersAndAvailability) {
  ASSERT_EQ(families().size(), 4u);
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
  EXPECT_EQ(parse_params(adaln, "threads=512,vec=4,pack=4", nullptr), "");
  EXPECT_NE(parse_params(adaln, "pack=2", nullptr), "");
  EXPECT_EQ(parse_params(adaln, "row_threads=32,threads=512", nullptr), "");
  EXPECT_NE(parse_params(adaln, "row_threads=16", nullptr).find("outside its domain"),
            std::string::npos);
  EXPECT_EQ(parse_params(family("QKNORM"), "threads=512,vec=4", nullptr), "");
  EXPECT_NE(parse_params(family("QKNORM"), "threads=1024", nullptr), "");
  EXPECT_EQ(parse_params(family("QKNORM"), "row_warps=2", nullptr), "");
  EXPECT_NE(parse_params(family("QKNORM"), "row_warps=4", nullptr).find("outside its domain"),
            std::string::npos);
  EXPECT_NE(parse_params(family("CAT"), "threads=512,rows_per_block=4", nullptr).find("constraint"),
            std::string::npos);
  EXPECT_EQ(std::string(to_string(Status::kErrorConstraint)), "constraint_violated");
}

TEST(Registry, DefaultsFillOmittedParametersAndAreLegal) {
  for (const auto& f : families()) {
    EXPECT_EQ(check_params(f, f.defaults), Status::kSuccess) << f.name;
    ParamValues p;
    EXPECT_EQ(parse_params(f, "", &p), "") << f.name;
    EXPECT_EQ(p, f.defaults) << f.name;
#if SPEEDGATE_WITH_CUDA
    EXPECT_TRUE(f.available) << f.name;
    EXPECT_EQ(f.variants, (std::vector<std::string>{"plain_aten", "fused_cuda"}));
#else
    EXPECT_EQ(f.variants, std::vector<std::string>{"plain_aten"});
    EXPECT_EQ(fused_rope(), nullptr);
#endif
  }
  const auto& cat = family("CAT");
  // rows_per_block defaults to 2: threads=512 alone is legal, with rows_per_block=4 not.
  EXPECT_EQ(parse_params(cat, "threads=512", nullptr), "");
  EXPECT_EQ(check_params(cat, {{"threads", 512}, {"rows_per_block", 4}}), Status::kErrorConstraint);
  EXPECT_EQ(check_params(cat, {{"threads", 100}, {"rows_per_block", 1}}), Status::kErrorConstraint);
  EXPECT_EQ(check_params(cat, {{"threads", 128}}), Status::kErrorConstraint) << "incomplete";
  EXPECT_EQ(with_defaults(cat, {{"threads", 128}}).at("rows_per_block"), 2);
  // flat=1 copies in one grid-stride loop: rows_per_block must be 1 (no duplicate variants).
  EXPECT_EQ(parse_params(cat, "flat=1,rows_per_block=1", nullptr), "");
  EXPECT_NE(parse_params(cat, "flat=1", nullptr).find("flat*rows_per_block<=1"), std::string::npos);
}

TEST(Registry, ProblemsDescribeLayoutAlignmentAndOperands) {
  auto x = at::randn({2, 12, 3, 12});
  auto table = rope3d_table(3, 2, 2, 12, 10000.0, at::kCPU);
  auto p = rope_problem({x, table});
  EXPECT_EQ(p.shape, (std::vector<int64_t>{2, 12, 3, 12}));
  EXPECT_TRUE(p.contiguous);
  EXPECT_TRUE(p.operands_match);
  EXPECT_GE(p.alignment_bytes, 16);
  EXPECT_FALSE(rope_problem({x.transpose(1, 2), table}).contiguous);
  EXPECT_FALSE(rope_problem({x, table.to(at::kFloat)}).operands_match);
  EXPECT_FALSE(rope_problem({x.narrow(1, 0, 6), table}).operands_match) << "table rows != S";
  // A view starting one float in is 4-byte aligned only.
  auto flat = at::randn({1 + 2 * 12 * 3 * 12});
  EXPECT_EQ(rope_problem({flat.narrow(0, 1, 2 * 12 * 3 * 12).view({2, 12, 3, 12}), table})
                .alignment_bytes,
            4);
  EXPECT_TRUE(rope_problem({at::Tensor(), table}).shape.empty());

  auto v = at::randn({2, 5, 8}), a = at::randn({2, 3, 8});
  auto cp = cat_problem({v, a});
  EXPECT_EQ(cp.shape, (std::vector<int64_t>{2, 8, 8}));
  EXPECT_TRUE(cp.operands_match);
  EXPECT_FALSE(cat_problem({v, a.to(at::kDouble)}).operands_match);
  EXPECT_FALSE(cat_problem({v, at::randn({2, 3, 7})}).operands_match);
  EXPECT_TRUE(split_problem(at::randn({2, 8, 8}), 5).operands_match);
  EXPECT_FALSE(split_problem(at::randn({2, 8, 8}), 8).operands_match);

  auto mod = at::randn({2, 6, 8}).chunk(6, 1);
  EXPECT_TRUE(adaln_problem({v, mod[0], mod[1], 1e-6}).operands_match)
      << "chunks of [B, 6, C] qualify";
  EXPECT_TRUE(adaln_problem({v, mod[0].narrow(0, 0, 1), mod[1], 1e-6}).operands_match)
      << "[1, 1, C] broadcasts";
  EXPECT_FALSE(adaln_problem({v, mod[0].to(at::kDouble), mod[1], 1e-6}).operands_match);
  EXPECT_FALSE(
      adaln_problem({v, at::randn({2, 8, 2}).narrow(2, 0, 1).transpose(1, 2), mod[1], 1e-6})
          .operands_match);
  EXPECT_TRUE(gated_problem(v, v.to(at::kBFloat16), mod[2]).operands_match);
  EXPECT_FALSE(gated_problem(v, v.to(at::kHalf), mod[2]).operands_match);
  EXPECT_FALSE(gated_problem(v, a, mod[2]).operands_match);

  auto w = at::randn({8});
  auto qp = qk_norm_problem({v, w, 1e-6, at::Tensor(), 1});
  EXPECT_EQ(qp.shape, (std::vector<int64_t>{2, 5, 8}));
  EXPECT_TRUE(qp.operands_match);
  EXPECT_FALSE(qk_norm_problem({v, w.to(at::kBFloat16), 1e-6, at::Tensor(), 1}).operands_match);
  EXPECT_FALSE(qk_norm_problem({v, at::randn({7}), 1e-6, at::Tensor(), 1}).operands_match);
  auto x12 = at::randn({2, 5, 12}), w12 = at::randn({12});
  auto qt = rope3d_table(1, 1, 5, 6, 10000.0, at::kCPU);
  auto rp = qk_norm_problem({x12, w12, 1e-6, qt, 2});
  EXPECT_EQ(rp.shape, (std::vector<int64_t>{2, 5, 2, 6})) << "with a table: [B, S, heads, hd]";
  EXPECT_TRUE(rp.operands_match);
  EXPECT_FALSE(qk_norm_problem({x12, w12, 1e-6, qt, 1}).operands_match)
      << "table is for hd = 6, not 12";
  EXPECT_FALSE(qk_norm_problem({x12, w12, 1e-6, qt, 5}).operands_match) << "12 % 5 != 0";
  EXPECT_FALSE(qk_norm_problem({x12, w12, 1e-6, qt.to(at::kFloat), 2}).operands_match);
  EXPECT_TRUE(qk_norm_problem({at::Tensor(), w, 1e-6, at::Tensor(), 1}).shape.empty());
}

TEST(Variants, PlainVariantsMatchReferenceInFloat64) {
  at::manual_seed(2);
  const ParamValues none;
  auto x = at::randn({1, 12, 2, 12}, at::kDouble);
  auto table = rope3d_table(3, 2, 2, 12, 10000.0, at::kCPU);
  auto y = plain_rope().run({x, table}, none);
  EXPECT_EQ(y.scalar_type(), at::kDouble);
  EXPECT_TRUE(at::equal(y, rope3d_apply_reference(x, table)));
  // float64 is exact enough to check the rotation against its closed form.
  auto xp = x.view({1, 12, 2, 6, 2});
  auto c = table.select(-1, 0).view({1, 12, 1, 6}), s = table.select(-1, 1).view({1, 12, 1, 6});
  auto o0 = xp.select(-1, 0) * c - xp.select(-1, 1) * s;
  EXPECT_TRUE(at::equal(y.view({1, 12, 2, 6, 2}).select(-1, 0), o0));
  auto v = at::randn({2, 5, 8}, at::kDouble);
  auto mod = at::randn({2, 6, 8}, at::kDouble).chunk(6, 1);
  auto m = plain_adaln().run({v, mod[0], mod[1], 1e-6}, none);
  auto mean = v.mean(-1, true), var = v.var(-1, /*unbiased=*/false, true);
  auto expect = (v - mean) / at::sqrt(var + 1e-6) * (1 + mod[1]) + mod[0];
  EXPECT_TRUE(at::allclose(m, expect, 1e-12, 1e-12));
}

}  // namespace
}  // namespace sg::kernels
