// Memory projection with known numbers.
#include "agent/memory/projection.hpp"

#include <gtest/gtest.h>

namespace sg::agent {
namespace {

constexpr double GiB = 1024.0 * 1024 * 1024;

ProjectionInputs inputs() {
  ProjectionInputs in;
  // fixed 7 GiB (6 GiB model state + 1 GiB workspace), 2.5 GiB per sample.
  in.points = {{2, 12 * GiB, 0}, {4, 17 * GiB, 0}};
  in.breakdown.parameters = 1 * GiB;
  in.breakdown.gradients = 1 * GiB;
  in.breakdown.optimizer = 2 * GiB;
  in.breakdown.frozen = 2 * GiB;
  in.target_micro_batch = 32;
  return in;
}

TEST(Projection, LinearFitOfTwoPoints) {
  LinearFit f = fit_peak({{2, 12 * GiB, 0}, {4, 17 * GiB, 0}});
  EXPECT_NEAR(f.fixed, 7 * GiB, 1);
  EXPECT_NEAR(f.per_sample, 2.5 * GiB, 1);
  EXPECT_NEAR(f.max_residual, 0, 1);
}

TEST(Projection, LeastSquaresOverThreePoints) {
  LinearFit f = fit_peak({{1, 10, 0}, {2, 20, 0}, {3, 33, 0}});
  EXPECT_NEAR(f.per_sample, 11.5, 1e-9);
  EXPECT_NEAR(f.fixed, 21.0 - 11.5 * 2, 1e-9);
  EXPECT_GT(f.max_residual, 0);
}

TEST(Projection, NeedsTwoDistinctMicroBatches) {
  EXPECT_THROW(fit_peak({{2, 10, 0}}), std::invalid_argument);
  EXPECT_THROW(fit_peak({{2, 10, 0}, {2, 11, 0}}), std::invalid_argument);
}

TEST(Projection, SingleGpuTarget) {
  Projection p = project_peak(inputs());
  // 6 GiB state + 1 GiB workspace + 32 * 2.5 GiB activations.
  EXPECT_NEAR(p.peak_bytes, 87 * GiB, 1);
  EXPECT_NEAR(p.other_fixed, 1 * GiB, 1);
  EXPECT_EQ(p.comm, 0);
}

TEST(Projection, ReproducesAMeasuredPoint) {
  ProjectionInputs in = inputs();
  in.target_micro_batch = 4;
  EXPECT_NEAR(project_peak(in).peak_bytes, 17 * GiB, 1);
}

TEST(Projection, ZeroStagesShardStateAcrossWorld) {
  ProjectionInputs in = inputs();
  in.world_size = 8;
  in.zero_stage = 0;
  const double comm = 2 * 25.0 * 1024 * 1024;
  EXPECT_NEAR(project_peak(in).peak_bytes, 87 * GiB + comm, 1);
  in.zero_stage = 1;  // optimizer / 8
  EXPECT_NEAR(project_peak(in).peak_bytes, 87 * GiB + comm - 2 * GiB * 7 / 8, 1);
  in.zero_stage = 2;  // + gradients / 8
  EXPECT_NEAR(project_peak(in).peak_bytes, 87 * GiB + comm - 3 * GiB * 7 / 8, 1);
  in.zero_stage = 3;  // + parameters / 8
  EXPECT_NEAR(project_peak(in).peak_bytes, 87 * GiB + comm - 4 * GiB * 7 / 8, 1);
}

TEST(Projection, FragmentationIsAdded) {
  ProjectionInputs in = inputs();
  in.fragmentation = 0.5 * GiB;
  EXPECT_NEAR(project_peak(in).peak_bytes, 87.5 * GiB, 1);
}

TEST(Projection, JsonKeepsInputsAndTerms) {
  ProjectionInputs in = inputs();
  Projection p = project_peak(in);
  auto j = p.to_json(in);
  EXPECT_EQ(j["points"].size(), 2u);
  EXPECT_EQ(j["target_micro_batch"], 32);
  EXPECT_NEAR(j["terms"]["activations"].get<double>(), 80 * GiB, 1);
  EXPECT_NEAR(j["fit"]["per_sample"].get<double>(), 2.5 * GiB, 1);
}

// Two phases that grow at different rates: the VAE encode peaks at small batches, the
// backward (steeper) overtakes it. The step's peak is 20/28 GiB at 2/4 samples (VAE,
// then backward); a line through those maxima predicts 4 GiB per sample, the backward
// grows by 3.5: the phase-wise projection extrapolates the phase that peaks at 32.
ProjectionInputs two_phase_inputs() {
  ProjectionInputs in = inputs();
  in.points = {{2, 20 * GiB, 0, {{"vae", 20 * GiB}, {"backward", 14 * GiB}}},
               {4, 28 * GiB, 0, {{"vae", 22 * GiB}, {"backward", 21 * GiB}}}};
  return in;
}

TEST(Projection, PhasesEachGetALineAndTheLargestAtTheTargetWins) {
  ProjectionInputs in = two_phase_inputs();
  Projection p = project_peak(in);
  EXPECT_EQ(p.phase, "backward");
  EXPECT_NEAR(p.fit.per_sample, 3.5 * GiB, 1);
  EXPECT_NEAR(p.fit.fixed, 7 * GiB, 1);
  // 7 GiB fixed (6 GiB state + 1 GiB workspace) + 32 * 3.5 GiB.
  EXPECT_NEAR(p.peak_bytes, 119 * GiB, 1);
  in.points = {{2, 20 * GiB, 0}, {4, 28 * GiB, 0}};  // the same maxima without phases
  EXPECT_NEAR(project_peak(in).peak_bytes, 140 * GiB, 1);
  EXPECT_EQ(project_peak(in).phase, "");
  // At a small target the flatter phase is the larger one.
  in = two_phase_inputs();
  in.target_micro_batch = 1;
  EXPECT_EQ(project_peak(in).phase, "vae");
}

TEST(Projection, PhasesMissingAtAPointAreNotExtrapolated) {
  ProjectionInputs in = two_phase_inputs();
  in.points[1].phases.erase("backward");
  EXPECT_EQ(project_peak(in).phase, "vae");
  in.points[1].phases.clear();  // one point without phases: the overall line
  EXPECT_EQ(project_peak(in).phase, "");
}

TEST(Projection, PhasePointsSurviveTheStoredJson) {
  ProjectionInputs in = two_phase_inputs();
  Projection p = project_peak(in);
  auto j = p.to_json(in);
  EXPECT_EQ(j["fit"]["phase"], "backward");
  ProjectionInputs back = projection_inputs_from_json(j);
  ASSERT_EQ(back.points.size(), 2u);
  EXPECT_EQ(back.points[1].phases, in.points[1].phases);
  EXPECT_NEAR(project_peak(back).peak_bytes, p.peak_bytes, 1);
  j["points"][0]["phases"]["vae"] = "big";
  EXPECT_THROW(projection_inputs_from_json(j), std::invalid_argument);
}

TEST(Projection, BadTargetsRejected) {
  ProjectionInputs in = inputs();
  in.zero_stage = 4;
  EXPECT_THROW(project_peak(in), std::invalid_argument);
  in = inputs();
  in.world_size = 0;
  EXPECT_THROW(project_peak(in), std::invalid_argument);
}

}  // namespace
}  // namespace sg::agent
