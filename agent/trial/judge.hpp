// The judge: gate and memory policy as pure functions over trial results (no store, no
// runs). The campaign evaluator runs the trials, the judge says what they mean
// (docs/controller.md, "The gate", "Speed verdicts", "Memory").
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "agent/common/disposition.hpp"
#include "agent/gate/gate.hpp"
#include "agent/gate/speed_stats.hpp"
#include "agent/memory/projection.hpp"
#include "agent/protocol/config.hpp"
#include "agent/protocol/manifest.hpp"
#include "agent/protocol/result.hpp"

namespace sg::agent {

// A disposition and the reason stored beside it.
struct Judgement {
  Disposition disposition = Disposition::crash;
  std::string reason;
};

// Every switch of `c` is bitwise (a kernel variant counts as its family's switch).
bool all_bitwise(const Config& c, const Manifest& m);
// `c` sets a switch whose effect is memory.
bool has_memory_switch(const Config& c, const Manifest& m);
// `c` is gated bitwise: a deterministic environment and bitwise switches only; else by
// tolerance.
bool gated_bitwise(const Config& c, const Manifest& m, bool deterministic);

// The gate verdict of `run` against the baseline run `s0` and its bands.
Verdict judge_gate(bool bitwise, const TrialResult& run, const TrialResult& s0,
                   const ToleranceBands& bands);

// What a memory projection is made of: the run at `micro_batch` and the probe at
// `probe_micro_batch` (a probe off the CPU adds its reserved-over-allocated fragmentation).
ProjectionInputs projection_inputs(const TrialResult& at_mb, int micro_batch,
                                   const TrialResult& probe, int probe_micro_batch,
                                   int target_micro_batch, int world_size, int zero_stage);
// The measured peak at the target where it was measured on one device (projection error).
std::optional<double> measured_at_target(const ProjectionInputs& in);
// nullopt when `peak_bytes` fits the largest budget (or there are none), else the reason to
// prune.
std::optional<std::string> over_every_budget(double peak_bytes,
                                             const std::vector<double>& budget_bytes);

// A memory trade-off: a memory switch whose projected peak is below the baseline's by more
// than the noise threshold.
bool memory_trade(const Config& c, const Manifest& m, double peak_bytes,
                  double baseline_peak_bytes);

// The verdict of the speed pairs of a configuration that passed the gate (`gate_reason`).
// `trade`: it saves memory (memory_trade), accepted whatever its speed; `probed`: its
// memory was probed.
Judgement judge_speed(const std::string& gate_reason, const SpeedInterval& s, double min_effect,
                      int max_repeats, bool trade, double peak_fraction, bool probed);
// The verdict from the memory probe at the target alone (no pairs): NaN target_speedup
// means the probe did not run at the target.
Judgement judge_target_probe(const std::string& gate_reason, double target_speedup,
                             double min_effect, int target_micro_batch, int micro_batch);

}  // namespace sg::agent
