// Speed verdicts you can defend (docs/controller.md, "Speed verdicts").
// Each ABAB pair gives one log-ratio d = log(baseline step time / candidate step time),
// step time = the median of a run's per-step seconds after its warm-up steps. The
// verdict is a Student-t interval on the mean of d, one-sided at `confidence`, with the
// error rate split evenly (Bonferroni) over every look the sequential rule may take, so
// adding pairs while the interval straddles the threshold does not inflate the
// false-accept rate. Looks are few and spaced (3, 5, 8 pairs by default: each about
// kLookGrowth times the last, the cap always one): a look at every pair count split the
// error rate six ways and cost a real 10 % speedup a fifth of its power on this
// project's 2-core host (benchmarks/results/gate_speed.md).
#pragma once
#include <cmath>
#include <string>
#include <vector>

#include "agent/protocol/result.hpp"

namespace sg::agent {

// A speedup must clear 1 + kDefaultMinEffect at the interval's lower bound (--min-effect).
constexpr double kDefaultMinEffect = 0.02;
constexpr double kSpeedConfidence = 0.95;
// Power assumed when stating the smallest speedup a host can detect.
constexpr double kDetectionPower = 0.80;

struct SpeedPair {
  double base_step_s = 0, cand_step_s = 0;
};

// Each look after the first comes at about this many times the previous look's pairs.
constexpr double kLookGrowth = 1.6;

struct SpeedRule {
  double min_effect = kDefaultMinEffect;
  int min_pairs = 3;  // --repeats: pairs at the first look
  int max_pairs = 8;  // --max-repeats: the last look; still straddling there = inconclusive
  double confidence = kSpeedConfidence;
  // The pair counts at which the rule judges: min_pairs (at least 2), then
  // ceil(kLookGrowth x the last), ending at max_pairs (3, 5, 8 for the defaults);
  // {max_pairs} when min >= max.
  std::vector<int> look_points() const;
  bool is_look(int pairs) const;
  int looks() const { return static_cast<int>(look_points().size()); }
  // One-sided error rate of each look (Bonferroni over the looks).
  double alpha_per_look() const { return (1.0 - confidence) / looks(); }
};

enum class SpeedCall {
  faster,      // lower bound >= 1 + min effect
  not_faster,  // upper bound < 1 + min effect
  undecided,   // straddles; add a pair (or inconclusive at the cap)
};

struct SpeedInterval {
  int pairs = 0;
  double speedup = 0;     // exp(mean log-ratio): the geometric mean of the pair ratios
  double lo = 0, hi = 0;  // one-sided bounds at the rule's confidence (per-look alpha)
  double sd_log = 0;      // sample standard deviation of the log-ratios
  SpeedCall call = SpeedCall::undecided;
  // "1.080x [1.030, 1.120] 95 %, 5 pairs"
  std::string text() const;
};

// "1.080x [1.030, 1.120] 95 %, 5 pairs"; without bounds (NaN: unpaired, or a row from before
// intervals were stored) "1.080x ± 0.020 (half-range, no interval)" when the old half-range
// `spread` is known, else "1.080x (no interval)".
std::string speed_text(double speedup, double lo, double hi, int pairs,
                       double spread = std::nan(""));

// REQUIRES: every pair's times > 0. Fewer than 2 pairs give an infinite interval.
SpeedInterval judge_pairs(const std::vector<SpeedPair>& pairs, const SpeedRule& rule);
// True when the sequential rule stops at this interval (decided, or at the cap).
bool speed_settled(const SpeedInterval& v, const SpeedRule& rule);
// The sequential rule after each new pair: false between looks (fewer than min_pairs, or
// a count that is not a look point) and while the interval straddles below the cap; true
// with the verdict's interval in *out otherwise.
bool speed_stops(const std::vector<SpeedPair>& so_far, const SpeedRule& rule, SpeedInterval* out);
// The verdict the sequential rule reaches on recorded pairs, taken in order (a replay of
// what a campaign would have run); the interval of all of them if it never stops.
SpeedInterval replay_speed(const std::vector<SpeedPair>& recorded, const SpeedRule& rule);

// The per-run statistic: median of the step seconds after the warm-up steps (the first
// quarter, at least one when there are two or more steps). 0 when nothing was timed.
double steady_step_seconds(const std::vector<StepRecord>& steps);

// A/A pairs (baseline against itself) measure the host's noise.
struct HostNoise {
  int pairs = 0;
  double sd_log = 0;  // standard deviation of the A/A log-ratios
  double mean_log = 0;
  // The smallest true speedup that clears the rule's threshold with kDetectionPower at
  // max_pairs, given this noise: (1 + min effect) * exp((t_alpha + t_power) sd / sqrt(n)).
  double detectable_speedup = 0;
  // The noise's own share of it: exp((t_alpha + t_power) sd / sqrt(n)) - 1; a min effect
  // below this is below what the host can resolve.
  double resolution = 0;
  std::string text() const;
};
HostNoise measure_noise(const std::vector<SpeedPair>& aa_pairs, const SpeedRule& rule);

// Student t quantile: the t with P(T <= t) = p for `df` degrees of freedom (df >= 1).
double student_t_quantile(double p, int df);

}  // namespace sg::agent
