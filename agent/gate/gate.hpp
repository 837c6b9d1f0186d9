// The gate: judges trial results against the baseline; launches nothing.
//  - bitwise class: every step's loss and grad-norm bits and both digests equal
//  - tolerance class: deviation from baseline s0 inside k x the rounding band (how far
//    training moves when only rounding moves) and inside the seed-to-seed band x factor
//  - speed: paired interleaved repeats with a confidence bound (gate/speed_stats.hpp)
//  - memory: projected peak <= budget (see agent/memory/)
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/common/problem.hpp"
#include "agent/protocol/result.hpp"

namespace sg::agent {

// Gains below this fraction are noise to the search strategies (stacking, pruning,
// greedy order); speed verdicts use the confidence bound of gate/speed_stats.hpp.
constexpr double kNoiseThreshold = 0.02;
// Tolerance-class deviations may be this many times the seed-to-seed band (outer bound).
constexpr double kDefaultBandFactor = 2.0;
// ... and this many times the rounding band (the judge). Measured (docs/controller.md,
// "Calibrating the tolerance gate"): bf16 autocast sits at 1.8x the band after 4 steps and
// 0.4x after 16; label smoothing, dropped positions and a warm-up at 3x and more.
constexpr double kRoundingBandFactor = 2.0;
// The rounding band's perturbation: bf16's relative precision (2^-8), protocol --perturb.
constexpr double kDefaultPerturbEps = 1.0 / 256;
// Tolerance switches are confirmed at this many times the gate's steps before a preset.
constexpr int kDefaultHorizonFactor = 4;
// Floors so that a band measured as exactly zero (fully seed-independent metrics)
// still admits float rounding: relative to the baseline's magnitude.
constexpr double kBandRelativeFloor = 1e-6;

struct Verdict {
  bool pass = false;
  std::string reason;  // names the first difference / the metric outside the band
};

// Deviation of `run` from the reference run (same steps): the metrics of the band.
struct Deviation {
  double curve_rms = 0;      // RMS over steps of (loss - ref loss)
  double eval_loss_abs = 0;  // |eval - ref eval|
  double grad_norm_log = 0;  // |log(mean grad norm / ref mean grad norm)|
};

Deviation deviation(const TrialResult& run, const TrialResult& ref);

// The seed-to-seed band: the largest deviation of each seed's run from seed s0.
struct Band {
  Deviation max;
  int seeds = 0;
};
Band compute_band(const TrialResult& s0, const std::vector<TrialResult>& other_seeds);

// The rounding band: the largest deviation of a perturbed run (--perturb) from the
// unperturbed run at the same seed, over the seeds measured.
Band compute_rounding_band(
    const std::vector<std::pair<TrialResult, TrialResult>>& perturbed_vs_plain);

// nullopt when the band can judge; else why not (non-finite, or zero where a seed or a
// perturbation must move training: the trainer ignores it).
Problem band_problem(const Band& band, const std::string& what);

Verdict bitwise_equal(const TrialResult& a, const TrialResult& b);

// What a tolerance verdict is judged against. Without a rounding band (the trainer has no
// --perturb) the seed band alone judges, and the verdict says so.
struct ToleranceBands {
  Band seed;
  double seed_factor = kDefaultBandFactor;
  std::optional<Band> rounding;
  double rounding_factor = kRoundingBandFactor;
};
Verdict within_tolerance(const TrialResult& candidate, const TrialResult& s0,
                         const ToleranceBands& bands);
// The seed band alone (kept for callers that have no rounding band).
Verdict within_band(const TrialResult& candidate, const TrialResult& s0, const Band& band,
                    double factor = kDefaultBandFactor);

Verdict memory_fits(double projected_bytes, double budget_bytes);

double median(std::vector<double> v);

}  // namespace sg::agent
