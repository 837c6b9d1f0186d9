// The gate: judges trial results against the baseline; launches nothing.
//  - bitwise class: every step's loss and grad-norm bits and both digests equal
//  - tolerance class: deviation from baseline s0 inside the seed-to-seed band x factor
//  - speed: paired interleaved repeats, medians, above kNoiseThreshold
//  - memory: projected peak <= budget (see agent/memory/)
#pragma once
#include <string>
#include <vector>

#include "agent/runner/result.hpp"

namespace sg::agent {

// A speedup must exceed 1 + kNoiseThreshold (median of paired ratios) to count.
constexpr double kNoiseThreshold = 0.02;
// Tolerance-class deviations may be this many times the seed-to-seed band.
constexpr double kDefaultBandFactor = 2.0;
// Floors so that a band measured as exactly zero (fully seed-independent metrics)
// still admits float rounding: relative to the baseline's magnitude.
constexpr double kBandRelativeFloor = 1e-6;

struct Verdict {
  bool pass = false;
  std::string reason;  // names the first difference / the metric outside the band
};

// Deviation of `run` from the reference run (same steps): the metrics of the band.
struct Deviation {
  double curve_rms = 0;       // RMS over steps of (loss - ref loss)
  double eval_loss_abs = 0;   // |eval - ref eval|
  double grad_norm_log = 0;   // |log(mean grad norm / ref mean grad norm)|
};

Deviation deviation(const TrialResult& run, const TrialResult& ref);

// The seed-to-seed band: the largest deviation of each seed's run from seed s0.
struct Band {
  Deviation max;
  int seeds = 0;
};
Band compute_band(const TrialResult& s0, const std::vector<TrialResult>& other_seeds);

Verdict bitwise_equal(const TrialResult& a, const TrialResult& b);
Verdict within_band(const TrialResult& candidate, const TrialResult& s0, const Band& band,
                    double factor = kDefaultBandFactor);

struct SpeedVerdict {
  bool faster = false;
  double speedup = 0;   // median of per-pair ratios candidate / baseline
  double spread = 0;    // (max ratio - min ratio) / 2
  double baseline_median = 0, candidate_median = 0;
  std::string reason;
};

// REQUIRES: baseline.size() == candidate.size() >= 1 (pairs from an ABAB... schedule).
SpeedVerdict judge_speed(const std::vector<double>& baseline, const std::vector<double>& candidate,
                         double noise_threshold = kNoiseThreshold);

Verdict memory_fits(double projected_bytes, double budget_bytes);

double median(std::vector<double> v);

}  // namespace sg::agent
