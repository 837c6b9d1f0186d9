#include "agent/trial/judge.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "agent/protocol/kernel_params.hpp"

namespace sg::agent {

bool all_bitwise(const Config& c, const Manifest& m) {
  for (const auto& [k, v] : c) {
    // A kernel variant is gated like its family's switch (also in the configuration).
    if (find_kernel_family(m, k)) continue;
    const SwitchSpec* s = m.find_switch(k);
    if (!s || !s->bitwise()) return false;
  }
  return true;
}

bool has_memory_switch(const Config& c, const Manifest& m) {
  for (const auto& [k, v] : c) {
    const SwitchSpec* s = m.find_switch(k);
    if (s && s->effect == "memory") return true;
  }
  return false;
}

bool gated_bitwise(const Config& c, const Manifest& m, bool deterministic) {
  return deterministic && all_bitwise(c, m);
}

Verdict judge_gate(bool bitwise, const TrialResult& run, const TrialResult& s0,
                   const ToleranceBands& bands) {
  return bitwise ? bitwise_equal(run, s0) : within_tolerance(run, s0, bands);
}

ProjectionInputs projection_inputs(const TrialResult& at_mb, int micro_batch,
                                   const TrialResult& probe, int probe_micro_batch,
                                   int target_micro_batch, int world_size, int zero_stage) {
  ProjectionInputs in;
  in.points = {{micro_batch, at_mb.peak_allocated_max(), at_mb.peak_reserved_max(),
                at_mb.phase_peak_allocated},
               {probe_micro_batch, probe.peak_allocated_max(), probe.peak_reserved_max(),
                probe.phase_peak_allocated}};
  in.breakdown = at_mb.breakdown;
  if (probe.device != "cpu") {
    in.fragmentation = std::max(0.0, probe.peak_reserved_max() - probe.peak_allocated_max());
  }
  in.target_micro_batch = target_micro_batch;
  in.world_size = world_size;
  in.zero_stage = zero_stage;
  return in;
}

std::optional<double> measured_at_target(const ProjectionInputs& in) {
  if (in.world_size != 1) return std::nullopt;  // the target's world was not measured here
  std::optional<double> measured;
  for (const auto& pt : in.points) {
    if (pt.micro_batch == in.target_micro_batch && pt.peak_bytes > 0)
      measured = pt.peak_bytes + in.fragmentation;
  }
  return measured;
}

std::optional<std::string> over_every_budget(double peak_bytes,
                                             const std::vector<double>& budget_bytes) {
  if (budget_bytes.empty()) return std::nullopt;
  const double largest = std::max(0.0, *std::max_element(budget_bytes.begin(), budget_bytes.end()));
  if (!(peak_bytes > largest)) return std::nullopt;  // NaN (not probed) fits
  return memory_fits(peak_bytes, largest).reason;
}

bool memory_trade(const Config& c, const Manifest& m, double peak_bytes,
                  double baseline_peak_bytes) {
  return has_memory_switch(c, m) && baseline_peak_bytes > 0 &&
         peak_bytes < baseline_peak_bytes * (1.0 - kNoiseThreshold);
}

Judgement judge_speed(const std::string& gate_reason, const SpeedInterval& s, double min_effect,
                      int max_repeats, bool trade, double peak_fraction, bool probed) {
  const std::string speed_text = fmt::format("{} (threshold {:.3f}x)", s.text(), 1.0 + min_effect);
  if (s.call == SpeedCall::faster) {
    return {Disposition::accepted,
            gate_reason + "; faster: " + speed_text + (probed ? "" : "; memory not probed")};
  }
  if (trade) {
    return {Disposition::accepted,
            fmt::format("{}; memory trade-off: projected peak {:.1f} % of baseline; {}",
                        gate_reason, 100.0 * peak_fraction, speed_text)};
  }
  if (s.call == SpeedCall::not_faster)
    return {Disposition::slower, gate_reason + "; not faster: " + speed_text};
  return {Disposition::inconclusive, fmt::format("{}; inconclusive at the cap of {} pairs: {}",
                                                 gate_reason, max_repeats, speed_text)};
}

Judgement judge_target_probe(const std::string& gate_reason, double target_speedup,
                             double min_effect, int target_micro_batch, int micro_batch) {
  if (std::isnan(target_speedup)) {
    return {Disposition::accepted,
            gate_reason + "; no speed: the memory probe did not run at the target micro-batch"};
  }
  const bool faster = target_speedup >= 1.0 + min_effect;
  return {
      faster ? Disposition::accepted : Disposition::slower,
      fmt::format(
          "{}; {:.3f}x the baseline at micro-batch {} (memory probes, unpaired; not paired at {})",
          gate_reason, target_speedup, target_micro_batch, micro_batch)};
}

}  // namespace sg::agent
