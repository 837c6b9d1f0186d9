// What a search strategy sees of the world: evaluate a configuration at a step
// budget and get a gated verdict. The real evaluator runs trials through the
// runner and the gate; the replay evaluator answers from a recorded table
// (simulation mode, no trainer).
#pragma once
#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "agent/common/disposition.hpp"
#include "agent/common/errors.hpp"  // BudgetExhausted
#include "agent/protocol/config.hpp"
#include "agent/protocol/kernel_trial_result.hpp"

namespace sg::agent {

// What an evaluation measures after the gate run (docs/controller.md, "prune"):
//  full         the speed pairs at the measured micro-batch and the memory probe;
//  speed_pairs  the pairs only: no projected peak (NaN), so on no frontier and fitting no
//               budget;
//  target_probe the memory probe only, where it runs at the target micro-batch
//               (--probe-at-target): speed is target_speedup, the probe's samples/s over the
//               baseline's probe at the target; no pairs (speedup NaN).
// Strategy prune compares its drops with speed_pairs or target_probe, since only a drop it
// takes can become a preset, and evaluates the one it takes again with `full`: its trials
// are stored, so only what is missing runs.
enum class Measure { full, speed_pairs, target_probe };

struct Evaluation {
  std::int64_t id = 0;  // evaluations row (0 in pure simulation)
  Config config;
  int steps = 0;
  std::string strategy;
  Disposition disposition = Disposition::crash;
  std::string reason;
  std::string gate_class = "bitwise";
  double speedup = 0, spread = 0, samples_per_s = 0, projected_peak_bytes = 0;
  // The paired speedup's one-sided 95 % bounds and pair count (gate/speed_stats.hpp);
  // NaN / 0 when unpaired. speedup is the geometric mean of the pair ratios.
  double speedup_lo = std::nan(""), speedup_hi = std::nan("");
  int pairs = 0;
  // The memory probe's samples/s over the baseline's probe when both ran at the target
  // micro-batch (one unpaired run each); NaN otherwise.
  double target_speedup = std::nan("");
  std::vector<std::int64_t> trial_ids;

  // Training behaviour passed the gate (whether or not it was faster).
  bool correct() const {
    return disposition == Disposition::accepted || disposition == Disposition::slower ||
           disposition == Disposition::inconclusive;
  }
  bool accepted() const { return disposition == Disposition::accepted; }
  // False for an evaluation made with Measure::speed_pairs.
  bool memory_probed() const { return !std::isnan(projected_peak_bytes); }
  // False for an evaluation made with Measure::target_probe.
  bool paired() const { return !std::isnan(speedup); }
};

class Evaluator {
 public:
  virtual ~Evaluator() = default;
  // Gated verdict for `config` at `steps`. The baseline (empty config) returns
  // accepted with speedup 1. May throw BudgetExhausted.
  virtual Evaluation evaluate(const Config& config, int steps, const std::string& strategy,
                              Measure measure) = 0;
  // A hint: these configurations are evaluated at `steps` next, in this order. An
  // evaluator that can run trials side by side may run their independent trials now;
  // the verdicts evaluate() then gives must be the same as without the hint.
  virtual void prefetch(const std::vector<Config>& /*configs*/, int /*steps*/,
                        Measure /*measure*/) {}
  // A kernel-level trial (protocol §5): `variants` ("plain" or parameter strings) of one
  // kernel family timed on its ops at the campaign's target shapes. nullopt when the
  // trial failed or this evaluator has none. May throw BudgetExhausted.
  virtual std::optional<KernelTrialResult> time_kernels(
      const std::string& /*family*/, const std::vector<std::string>& /*variants*/) {
    return std::nullopt;
  }
  // Finals (strategy "finals", agent/search/finals.hpp): pairs each memory budget's
  // `per_budget` leading accepted configurations among `before` (the evaluations the plan
  // made before finals) against the baseline at the target micro-batch and records the
  // ratios (table target_finals) that presets rank by. Returns how many configurations
  // were paired; 0 for an evaluator that has no target (replay). May throw BudgetExhausted.
  virtual int run_finals(const std::vector<Evaluation>& /*before*/, int /*per_budget*/) {
    return 0;
  }
};

}  // namespace sg::agent
