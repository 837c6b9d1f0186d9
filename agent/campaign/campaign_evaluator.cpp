#include "agent/campaign/campaign_evaluator.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "agent/common/errors.hpp"
#include "agent/common/progress_sink.hpp"
#include "agent/protocol/kernel_params.hpp"
#include "agent/protocol/kernel_trial_result.hpp"
#include "agent/trial/judge.hpp"

namespace sg::agent {

using nlohmann::json;

namespace {

// Kernel trials time each variant this many times (median) after warm-up.
constexpr int kKernelTrialRepeats = 31;

}  // namespace

TrialSettings trial_settings(const CampaignOptions& opt) {
  TrialSettings s;
  s.trainer = opt.trainer;
  s.workload = opt.workload;
  s.size = opt.size;
  s.grad_accum = opt.trial.grad_accum;
  s.threads = opt.trial.threads;
  s.world_size = opt.trial.world_size;
  s.deadline_s = opt.trial.deadline_s;
  s.db_path = opt.db_path;
  s.runs_dir = opt.runs_dir;
  s.executor = opt.executor;
  s.budget_trials = opt.budget.trials;
  s.budget_minutes = opt.budget.minutes;
  return s;
}

CampaignEvaluator::CampaignEvaluator(Store& store, std::int64_t campaign_id,
                                     const Manifest& manifest, const CampaignOptions& opt)
    : store_(store),
      campaign_id_(campaign_id),
      manifest_(manifest),
      opt_(opt),
      trials_(store, campaign_id, manifest, trial_settings(opt)) {
  const SizeSpec* size = manifest_.find_size(opt_.workload, opt_.size);
  int def = size ? size->default_micro_batch : 1;
  micro_batch_ = opt_.trial.micro_batch > 0 ? opt_.trial.micro_batch : def;
  target_micro_batch_ = opt_.memory.target_micro_batch > 0 ? opt_.memory.target_micro_batch : def;
  probe_micro_batch_ = opt_.memory.probe_at_target && target_micro_batch_ > micro_batch_
                           ? target_micro_batch_
                           : micro_batch_ * 2;
  trials_.set_on_progress([this](const std::string& what) { progress(what); });
}

void CampaignEvaluator::progress(const std::string& what) const {
  if (!opt_.progress) return;
  set_progress_status(progress_line(trials_.trials_run(), opt_.budget.trials, opt_.budget.minutes,
                                    best_speedup_, trials_.elapsed_s(), what));
}

CampaignEvaluator::Plan CampaignEvaluator::plan(const std::string& purpose, const Config& c,
                                                int seed, int steps, int micro_batch, int repeat,
                                                const std::string& paired_with,
                                                double perturb) const {
  return Plan{purpose, c, seed, steps, micro_batch, repeat, paired_with, std::nullopt, perturb};
}

CampaignEvaluator::Run CampaignEvaluator::run(const std::string& purpose, const Config& c, int seed,
                                              int steps, int micro_batch, int repeat,
                                              const std::string& paired_with, double perturb) {
  return trials_.run(plan(purpose, c, seed, steps, micro_batch, repeat, paired_with, perturb));
}

std::optional<KernelTrialResult> CampaignEvaluator::time_kernels(
    const std::string& family, const std::vector<std::string>& variants) {
  Plan p;
  p.purpose = kKernelTimingPurpose;
  p.micro_batch = target_micro_batch_;  // the shapes the presets are for
  p.kernel = KernelTrialSpec{family, variants, kKernelTrialRepeats};
  const Run done = trials_.run(p);  // shared campaigns reserve kernel trials too (before_trial)
  if (done.failure || !done.result) {
    spdlog::warn("kernel trial {} ({}): {}: {}", done.trial_id, family,
                 done.failure ? to_string(*done.failure) : "no result", done.reason);
    return std::nullopt;
  }
  KernelTrialParse k = parse_kernel_trial_text(done.result->raw.dump());
  if (!k.result) return std::nullopt;  // parsed once already; cannot differ
  std::vector<KernelTimingRow> rows;
  for (const auto& v : k.result->variants) {
    rows.push_back({0, campaign_id_, done.trial_id, family, v.params, k.result->micro_batch,
                    v.fwd_us, v.fwdbwd_us, v.matches_plain});
  }
  store_.add_kernel_timings(rows);
  return k.result;
}

void CampaignEvaluator::prefetch(const std::vector<Config>& configs, int steps, Measure measure) {
  if (trials_.capacity() <= 1) return;
  const Baseline& base = baseline(steps);
  const int s0 = opt_.trial.seeds.front();
  std::vector<Plan> gate_runs, probes;
  for (const auto& c : configs) {
    if (c.empty() || validate_config(c, manifest_)) continue;
    gate_runs.push_back(plan("candidate", c, s0, steps, micro_batch_, 0));
  }
  trials_.run_batch(gate_runs);
  if (measure == Measure::speed_pairs) return;
  // The memory probes of the candidates that pass the gate (the next independent step).
  for (const auto& g : gate_runs) {
    auto done = trials_.stored(g);
    if (!done || !done->result) continue;
    if (gate(g.config, *done->result, base).pass) {
      probes.push_back(
          plan("memory_probe", g.config, s0, opt_.trial.screen_steps, probe_micro_batch_, 0));
    }
  }
  trials_.run_batch(probes);
}

Verdict CampaignEvaluator::gate(const Config& config, const TrialResult& result,
                                const Baseline& base) const {
  const bool bitwise = gated_bitwise(config, manifest_, deterministic_.value_or(false));
  return judge_gate(bitwise, result, base.s0, base.bands);
}

std::optional<Projection> CampaignEvaluator::project(const Config& c, const TrialResult& at_mb,
                                                     std::vector<std::int64_t>& ids, Run* probe_out,
                                                     int* probe_mb_out) {
  const int probe_steps = opt_.trial.screen_steps;
  int probe_mb = probe_micro_batch_;
  Run probe = run("memory_probe", c, opt_.trial.seeds.front(), probe_steps, probe_mb, 0);
  ids.push_back(probe.trial_id);
  if (!probe.result && probe.failure == Disposition::oom && probe_mb != micro_batch_ * 2) {
    // The target does not fit this device unsharded (it may fit the target's sharded
    // world): project from the line through the measured micro-batch and twice it.
    spdlog::info("memory probe at the target micro-batch {} ran out of memory; probing at {}",
                 probe_mb, micro_batch_ * 2);
    probe_mb = micro_batch_ * 2;
    probe = run("memory_probe", c, opt_.trial.seeds.front(), probe_steps, probe_mb, 0);
    ids.push_back(probe.trial_id);
  }
  *probe_mb_out = probe_mb;
  *probe_out = probe;
  if (!probe.result) {
    probe_out->reason =
        "memory probe at micro-batch " + std::to_string(probe_mb) + ": " + probe.reason;
    return std::nullopt;
  }
  const ProjectionInputs in =
      projection_inputs(at_mb, micro_batch_, *probe.result, probe_mb, target_micro_batch_,
                        opt_.memory.target_world_size, opt_.memory.zero_stage);
  Projection p = project_peak(in);
  ProjectionRow row;
  row.campaign_id = campaign_id_;
  row.config_key = config_key(c);
  row.target_micro_batch = in.target_micro_batch;
  row.world_size = in.world_size;
  row.zero_stage = in.zero_stage;
  row.inputs = p.to_json(in);
  row.projected_bytes = p.peak_bytes;
  if (auto measured = measured_at_target(in)) {
    // The target was measured on the device at hand: store the projection error.
    row.measured_bytes = *measured;
    row.relative_error = (p.peak_bytes - *measured) / *measured;
  }
  store_.add_projection(row);
  return p;
}

Evaluation CampaignEvaluator::finish(Evaluation e) {
  EvaluationRow row;
  row.campaign_id = campaign_id_;
  row.strategy = e.strategy;
  row.config_key = config_key(e.config);
  row.steps = e.steps;
  row.disposition = e.disposition;
  row.gate_class = e.gate_class;
  row.reason = e.reason;
  row.speedup = e.speedup;
  row.speedup_spread = e.spread;
  row.speedup_lo = e.speedup_lo;
  row.speedup_hi = e.speedup_hi;
  row.pairs = e.pairs;
  row.samples_per_s = e.samples_per_s;
  row.projected_peak_bytes = e.projected_peak_bytes;
  row.trial_ids = e.trial_ids;
  e.id = store_.add_evaluation(row);
  for (const auto& f : manifest_.kernel_families) {
    auto it = e.config.find(kernel_config_name(f));
    if (it != e.config.end())
      store_.add_kernel_trial(campaign_id_, f.name, json{{"params", it->second}}, e.id);
  }
  trials_.set_disposition(e.trial_ids, e.disposition);
  if (e.accepted() && e.paired()) best_speedup_ = std::max(best_speedup_, e.speedup);
  progress(fmt::format("{} {}", to_string(e.disposition), config_label(e.config)));
  return e;
}

Evaluation CampaignEvaluator::evaluate_baseline(Evaluation e, const Baseline& base) {
  e.trial_ids = base.trial_ids;
  e.disposition = Disposition::accepted;
  e.speedup = 1.0;
  e.samples_per_s = base.s0.samples_per_s;
  Run probe;
  int probe_mb = 0;
  auto p = project(e.config, base.s0, e.trial_ids, &probe, &probe_mb);
  if (!p) throw GateFailure("baseline memory probe failed: " + probe.reason);
  e.projected_peak_bytes = p->peak_bytes;
  baseline_projected_ = p->peak_bytes;
  if (probe_mb == target_micro_batch_ && probes_at_target()) {
    baseline_target_samples_per_s_ = probe.result->samples_per_s;
    e.target_speedup = 1.0;
  }
  e.reason = "baseline";
  return finish(e);
}

bool CampaignEvaluator::probe_memory(const Config& config, const Run& cand, Measure measure,
                                     Evaluation& e, std::optional<Projection>& p) {
  if (measure == Measure::speed_pairs) {
    e.projected_peak_bytes = std::nan("");  // on no frontier, fits no budget
    return true;
  }
  Run probe;
  int probe_mb = 0;
  p = project(config, *cand.result, e.trial_ids, &probe, &probe_mb);
  if (!p) {
    e.disposition = probe.failure.value_or(Disposition::crash);
    e.reason = probe.reason;
    return false;
  }
  if (probe_mb == target_micro_batch_ && baseline_target_samples_per_s_ > 0) {
    e.target_speedup = probe.result->samples_per_s / baseline_target_samples_per_s_;
  }
  e.projected_peak_bytes = p->peak_bytes;
  std::vector<double> budgets;
  for (const auto& b : opt_.memory.budgets) budgets.push_back(static_cast<double>(b.bytes));
  if (auto over = over_every_budget(p->peak_bytes, budgets)) {
    e.disposition = Disposition::pruned;
    e.reason = *over;
    return false;
  }
  return true;
}

Evaluation CampaignEvaluator::evaluate(const Config& config, int steps, const std::string& strategy,
                                       Measure measure) {
  Evaluation e;
  e.config = config;
  e.steps = steps;
  e.strategy = strategy;
  if (Problem err = validate_config(config, manifest_)) {
    e.disposition = Disposition::crash;
    e.reason = "invalid configuration: " + *err;
    return finish(e);
  }
  const Baseline& base = baseline(steps);
  const bool bitwise = gated_bitwise(config, manifest_, deterministic_.value_or(false));
  e.gate_class = bitwise ? "bitwise" : "tolerance";
  if (config.empty()) return evaluate_baseline(e, base);

  // Trials one at a time (one GPU, a CPU host, Slurm's default): the gate run doubles as the
  // candidate's side of the first speed pair, timed alone like any speed run, and the pair's
  // baseline side runs right after it once it passed (nothing is spent on a candidate that
  // fails the gate). A gate run names its pair in its key (paired_with), so a gate run timed
  // side by side (prefetch with parallel slots) or one stored by another pairing never
  // stands in for it; a drop compared at the target (no pairs now) names none.
  const std::string pair = config_key(config);
  if (measure == Measure::target_probe && !probes_at_target())
    measure = Measure::full;  // no speed without pairs
  const bool pairs = measure != Measure::target_probe;
  const bool gate_times_pair = pairs && opt_.speed.repeats >= 1 && trials_.capacity() <= 1;
  Run cand = run("candidate", config, opt_.trial.seeds.front(), steps, micro_batch_, 0,
                 gate_times_pair ? pair : "");
  e.trial_ids.push_back(cand.trial_id);
  if (!cand.result) {
    e.disposition = *cand.failure;
    e.reason = cand.reason;
    return finish(e);
  }
  Verdict v = gate(config, *cand.result, base);
  if (v.pass && !bitwise && steps == opt_.trial.steps && opt_.gate.horizon_factor > 1) {
    // Recipe changes grow with the horizon, rounding noise does not: confirm there first.
    Verdict h = confirm_at_horizon(config, steps);
    v = {h.pass, h.pass ? v.reason + "; " + h.reason : h.reason};
  }
  if (!v.pass) {
    e.disposition = Disposition::gate_failed;
    e.reason = v.reason;
    return finish(e);
  }
  std::optional<Run> first_base;
  if (gate_times_pair) {
    first_base = run("speed_base", {}, opt_.trial.seeds.front(), steps, micro_batch_, 0, pair);
    e.trial_ids.push_back(first_base->trial_id);
  }
  std::optional<Projection> p;
  if (!probe_memory(config, cand, measure, e, p)) return finish(e);
  if (!pairs) {
    // Speed from the probe at the target alone: one unpaired run against the baseline's.
    e.speedup = e.spread = std::nan("");
    e.samples_per_s = cand.result->samples_per_s;  // its gate run, unpaired
    Judgement j = judge_target_probe(v.reason, e.target_speedup, opt_.speed.min_effect,
                                     target_micro_batch_, micro_batch_);
    e.disposition = j.disposition;
    e.reason = j.reason;
    return finish(e);
  }
  SpeedOutcome speed = measure_speed(config, steps, cand, first_base, e);
  if (!speed.interval) return finish(e);
  const double peak = p ? p->peak_bytes : std::nan("");
  const bool trade = p && memory_trade(config, manifest_, peak, baseline_projected_);
  Judgement j =
      judge_speed(v.reason, *speed.interval, opt_.speed.min_effect, opt_.speed.max_repeats, trade,
                  baseline_projected_ > 0 ? peak / baseline_projected_ : 0, p.has_value());
  e.disposition = j.disposition;
  e.reason = j.reason;
  Evaluation done = finish(e);
  for (auto& row : speed.pairs) row.evaluation_id = done.id;
  store_.set_speed_pairs(done.id, speed.pairs);
  return done;
}

}  // namespace sg::agent
