// Gate math: bitwise compare, seed band, noise threshold, memory budget.
#include "agent/gate/gate.hpp"

#include <cmath>

#include <gtest/gtest.h>

#include "agent/common/floats.hpp"
#include "common/result/result_json.hpp"

namespace sg::agent {
namespace {

TrialResult make_run(int seed, double noise = 0.02, double grad_scale = 1.0, int steps = 8) {
  TrialResult r;
  r.status = "ok";
  r.steps = steps;
  for (int t = 0; t < steps; ++t) {
    // A deterministic pseudo-random wiggle per seed.
    double u = std::sin(seed * 12.9898 + t * 78.233);
    float loss = static_cast<float>(2.0 * std::exp(-0.15 * t) + noise * u);
    float gn = static_cast<float>((1.0 + 0.05 * std::cos(seed * 3.1 + t)) * grad_scale);
    StepRecord s;
    s.step = t;
    s.loss = loss;
    s.grad_norm = gn;
    s.loss_bits = *parse_bits_hex(sg::float_bits(loss));
    s.grad_norm_bits = *parse_bits_hex(sg::float_bits(gn));
    r.step_records.push_back(s);
  }
  r.eval_loss = r.step_records.back().loss - 0.01;
  r.has_eval = true;
  r.eval_loss_bits = *parse_bits_hex(sg::float_bits(static_cast<float>(r.eval_loss)));
  r.param_digest = "p" + std::to_string(seed);
  r.optimizer_digest = "o" + std::to_string(seed);
  return r;
}

TEST(Gate, BitwiseEqualRunsPass) { EXPECT_TRUE(bitwise_equal(make_run(0), make_run(0)).pass); }

TEST(Gate, OneFlippedLossBitFails) {
  TrialResult a = make_run(0), b = make_run(0);
  b.step_records[5].loss_bits ^= 1u;
  Verdict v = bitwise_equal(a, b);
  EXPECT_FALSE(v.pass);
  EXPECT_NE(v.reason.find("step 5 loss bits"), std::string::npos) << v.reason;
}

TEST(Gate, GradNormBitsAndDigestsAreCompared) {
  TrialResult a = make_run(0), b = make_run(0);
  b.step_records[0].grad_norm_bits ^= 1u;
  EXPECT_FALSE(bitwise_equal(a, b).pass);
  b = make_run(0);
  b.param_digest = "other";
  EXPECT_FALSE(bitwise_equal(a, b).pass);
  b = make_run(0);
  b.optimizer_digest = "other";
  EXPECT_FALSE(bitwise_equal(a, b).pass);
  b = make_run(0);
  b.step_records.pop_back();
  EXPECT_FALSE(bitwise_equal(a, b).pass);
}

TEST(Gate, BandFromSeedsAdmitsSmallDeviation) {
  TrialResult s0 = make_run(0);
  Band band = compute_band(s0, {make_run(1000), make_run(2000)});
  EXPECT_EQ(band.seeds, 3);
  EXPECT_GT(band.max.curve_rms, 0.0);
  // Same seed, slightly different rounding: well inside the band.
  TrialResult cand = make_run(0, 0.0201);
  EXPECT_TRUE(within_band(cand, s0, band).pass);
}

TEST(Gate, DeviationOutsideBandFails) {
  TrialResult s0 = make_run(0);
  Band band = compute_band(s0, {make_run(1000), make_run(2000)});
  TrialResult cand = make_run(0);
  for (auto& s : cand.step_records) s.loss += 0.5;
  Verdict v = within_band(cand, s0, band);
  EXPECT_FALSE(v.pass);
  EXPECT_NE(v.reason.find("RMS"), std::string::npos) << v.reason;
}

TEST(Gate, FourTimesGradNormFails) {
  // The gradient-accumulation bug (sum instead of mean over 4 micro-batches).
  TrialResult s0 = make_run(0);
  Band band = compute_band(s0, {make_run(1000), make_run(2000)});
  TrialResult bug = make_run(0, 0.02, /*grad_scale=*/4.0);
  Verdict v = within_band(bug, s0, band);
  EXPECT_FALSE(v.pass);
  EXPECT_NE(v.reason.find("grad-norm"), std::string::npos) << v.reason;
  // ... even with a generous factor.
  EXPECT_FALSE(within_band(bug, s0, band, /*factor=*/5.0).pass);
}

TEST(Gate, NonFiniteCandidateNeverInsideBand) {
  TrialResult s0 = make_run(0);
  Band band = compute_band(s0, {make_run(1000)});
  TrialResult cand = make_run(0);
  cand.step_records[3].loss = std::nan("");
  EXPECT_FALSE(within_band(cand, s0, band).pass);
}

TEST(Gate, EvalLossOutsideBandFails) {
  TrialResult s0 = make_run(0);
  Band band = compute_band(s0, {make_run(1000), make_run(2000)});
  TrialResult cand = make_run(0);
  cand.eval_loss += 1.0;
  EXPECT_FALSE(within_band(cand, s0, band).pass);
  cand = make_run(0);
  cand.has_eval = false;  // one run evaluated, the other did not: not comparable
  EXPECT_FALSE(within_band(cand, s0, band).pass);
}

TEST(Gate, RoundingBandJudgesTighterThanTheSeedBand) {
  TrialResult s0 = make_run(0);
  ToleranceBands bands;
  bands.seed = compute_band(s0, {make_run(1000), make_run(2000)});
  // A perturbed twin of s0 moves each loss by 1e-4: the rounding band.
  TrialResult perturbed = s0;
  for (auto& r : perturbed.step_records) r.loss += 1e-4;
  bands.rounding = compute_rounding_band({{perturbed, s0}});
  EXPECT_NEAR(bands.rounding->max.curve_rms, 1e-4, 1e-9);
  TrialResult rounding_like = s0, recipe_like = s0;
  for (auto& r : rounding_like.step_records) r.loss += 1.5e-4;  // 1.5x the band: inside 2x
  for (auto& r : recipe_like.step_records)
    r.loss += 5e-3;  // 50x the band, far inside the seed band
  EXPECT_TRUE(within_band(recipe_like, s0, bands.seed).pass) << "the seed band alone cannot see it";
  Verdict ok = within_tolerance(rounding_like, s0, bands);
  EXPECT_TRUE(ok.pass) << ok.reason;
  EXPECT_NE(ok.reason.find("sensitivity"), std::string::npos) << ok.reason;
  Verdict bad = within_tolerance(recipe_like, s0, bands);
  EXPECT_FALSE(bad.pass);
  EXPECT_NE(bad.reason.find("rounding band"), std::string::npos) << bad.reason;
}

TEST(Gate, WithoutRoundingBandTheVerdictSaysSeedBandSensitivity) {
  TrialResult s0 = make_run(0);
  ToleranceBands bands;
  bands.seed = compute_band(s0, {make_run(1000)});
  Verdict v = within_tolerance(make_run(0), s0, bands);
  EXPECT_TRUE(v.pass);
  EXPECT_NE(v.reason.find("seed-band sensitivity"), std::string::npos) << v.reason;
}

TEST(Gate, NonFiniteOrZeroBandIsAProblem) {
  TrialResult s0 = make_run(0);
  EXPECT_EQ(band_problem(compute_band(s0, {make_run(1000)}), "seed band"), std::nullopt);
  TrialResult nan_run = make_run(1000);
  nan_run.step_records[2].loss = std::nan("");
  EXPECT_NE(band_problem(compute_band(s0, {nan_run}), "seed band").value_or("").find("not finite"),
            std::string::npos);
  EXPECT_NE(
      band_problem(compute_rounding_band({{s0, s0}}), "rounding band").value_or("").find("zero"),
      std::string::npos);
}

TEST(Gate, MemoryBudget) {
  EXPECT_TRUE(memory_fits(80.0 * (1 << 30), 80.0 * (1 << 30)).pass);
  EXPECT_FALSE(memory_fits(80.1 * (1 << 30), 80.0 * (1 << 30)).pass);
}

TEST(Gate, Median) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median({4, 1, 2, 3}), 2.5);
}

}  // namespace
}  // namespace sg::agent
