#include "agent/campaign/campaign_evaluator.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "agent/common/errors.hpp"
#include "agent/common/floats.hpp"
#include "agent/common/progress_sink.hpp"
#include "agent/protocol/kernel_params.hpp"
#include "agent/protocol/kernel_trial_result.hpp"
#include "agent/runner/trial.hpp"
#include "agent/store/trial_launch.hpp"

namespace sg::agent {

using nlohmann::json;

namespace {

constexpr const char* kKernelTimingPurpose = "kernel_timing";
// Kernel trials time each variant this many times (median) after warm-up.
constexpr int kKernelTrialRepeats = 31;

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

TrialFinish finish_from(const TrialOutcome& o, const std::string& dir) {
  TrialFinish f;
  f.disposition = o.failure;
  f.run_ok = !o.failure.has_value();
  f.reason = o.reason;
  f.wall_s = o.process.wall_s;
  if (o.process.started && !o.process.signaled) f.exit_code = o.process.exit_code;
  if (o.process.signaled) f.signal = o.process.signal;
  f.stdout_log = o.stdout_log;
  f.stderr_log = o.stderr_log;
  f.result_path = o.result_path;
  f.trial_dir = dir;
  if (o.result) {
    const TrialResult& r = *o.result;
    f.result_json = r.raw.dump();
    f.samples_per_s = r.samples_per_s;
    f.tokens_per_s = r.tokens_per_s;
    f.peak_allocated = r.peak_allocated_max();
    f.peak_reserved = r.peak_reserved_max();
    f.eval_loss = r.eval_loss;
    f.eval_loss_bits = r.has_eval ? fmt::format("{:08x}", r.eval_loss_bits) : std::string();
    f.param_digest = r.param_digest;
    f.optimizer_digest = r.optimizer_digest;
    if (r.raw.contains("memory")) f.breakdown = r.raw.at("memory").at("breakdown");  // kernel trials have none
    for (const auto& s : r.step_records) {
      f.steps.push_back({s.step, s.loss, fmt::format("{:08x}", s.loss_bits), s.grad_norm,
                         fmt::format("{:08x}", s.grad_norm_bits), s.seconds});
    }
  }
  return f;
}

}  // namespace

CampaignEvaluator::CampaignEvaluator(Store& store, std::int64_t campaign_id, const Manifest& manifest,
                                     const CampaignOptions& opt)
    : store_(store), campaign_id_(campaign_id), manifest_(manifest), opt_(opt) {
  const SizeSpec* size = manifest_.find_size(opt_.workload, opt_.size);
  int def = size ? size->default_micro_batch : 1;
  micro_batch_ = opt_.micro_batch > 0 ? opt_.micro_batch : def;
  target_micro_batch_ = opt_.target_micro_batch > 0 ? opt_.target_micro_batch : def;
  probe_micro_batch_ = opt_.probe_at_target && target_micro_batch_ > micro_batch_ ? target_micro_batch_ : micro_batch_ * 2;
  executor_ = make_executor(opt_.executor, opt_.trial_world_size);
  runs_dir_ = opt_.executor.shared_dir.empty() ? opt_.runs_dir : opt_.executor.shared_dir;
}

void CampaignEvaluator::check_budget() const {
  if (opt_.budget_trials > 0 && trials_run_ >= opt_.budget_trials) throw BudgetExhausted();
  if (opt_.budget_minutes > 0) {
    double minutes = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count() / 60.0;
    if (minutes >= opt_.budget_minutes) throw BudgetExhausted();
  }
}

void CampaignEvaluator::progress(const std::string& what) const {
  if (!opt_.progress) return;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  set_progress_status(progress_line(trials_run_, opt_.budget_trials, opt_.budget_minutes, best_speedup_, elapsed, what));
}

std::string CampaignEvaluator::key_of(const Plan& p) const {
  std::string key = fmt::format("{}|{}|s{}|n{}|b{}|g{}|t{}|r{}|{}", p.purpose, config_key(p.config), p.seed, p.steps,
                                p.micro_batch, opt_.grad_accum, opt_.threads, p.repeat, p.paired_with);
  if (opt_.trial_world_size > 1 && !p.kernel) key += fmt::format("|w{}", opt_.trial_world_size);
  if (p.perturb > 0) key += fmt::format("|p{:.17g}", p.perturb);
  if (p.kernel) {
    key += fmt::format("|k{}|rep{}", p.kernel->family, p.kernel->repeats);
    for (const auto& v : p.kernel->variants) key += "|" + v;
  }
  return key;
}

std::optional<CampaignEvaluator::Run> CampaignEvaluator::stored(Store& store, const std::string& key) {
  auto row = store.find_trial(campaign_id_, key);
  if (!row || row->state != "finished" || row->disposition == Disposition::stale) return std::nullopt;
  Run out;
  out.trial_id = row->id;
  if (row->run_ok) {
    ResultParse p = row->purpose == kKernelTimingPurpose ? parse_kernel_trial_as_result(row->result_json)
                                                         : parse_result_text(row->result_json);
    if (p.result) {
      out.result = std::move(p.result);
      return out;
    }
    out.failure = Disposition::invalid_result;
    out.reason = "stored result unreadable: " + p.error;
    return out;
  }
  out.failure = row->disposition.value_or(Disposition::crash);
  out.reason = row->reason;
  return out;
}

bool CampaignEvaluator::budget_left(int more) const {
  if (opt_.budget_trials > 0 && trials_run_ + more >= opt_.budget_trials) return false;
  if (opt_.budget_minutes > 0) {
    double minutes = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count() / 60.0;
    if (minutes >= opt_.budget_minutes) return false;
  }
  return true;
}

CampaignEvaluator::Run CampaignEvaluator::run(const std::string& purpose, const Config& c, int seed, int steps,
                                              int micro_batch, int repeat, const std::string& paired_with,
                                              double perturb) {
  const Plan plan{purpose, c, seed, steps, micro_batch, repeat, paired_with, std::nullopt, perturb};
  const std::string key = key_of(plan);
  if (warm_start_) warm_start_(purpose, key);
  if (auto done = stored(store_, key)) return *done;
  check_budget();
  ++trials_run_;
  progress(fmt::format("{} {}", purpose, config_label(c)));
  Run out = execute(store_, plan, key);
  if (out.failure) spdlog::warn("trial {} ({} {}): {}: {}", out.trial_id, purpose, config_label(c), to_string(*out.failure), out.reason);
  return out;
}

CampaignEvaluator::Run CampaignEvaluator::execute(Store& store, const Plan& p, const std::string& key) {
  const Config& c = p.config;
  TrialRow t;
  t.campaign_id = campaign_id_;
  t.trial_key = key;
  t.purpose = p.purpose;
  t.config_key = config_key(c);
  t.config_json = json(c).dump();
  t.seed = p.seed;
  t.steps = p.steps;
  t.micro_batch = p.micro_batch;
  t.grad_accum = opt_.grad_accum;
  t.repeat = p.repeat;
  Run out;
  out.trial_id = store.claim_trial(t);
  const int world = p.kernel ? 1 : opt_.trial_world_size;
  set_trial_launch(store, out.trial_id, executor_->name(), "", world, "");

  TrialRequest req;
  req.trainer = opt_.trainer;
  req.workload = opt_.workload;
  req.size = opt_.size;
  req.steps = p.steps;
  req.seed = p.seed;
  req.micro_batch = p.micro_batch;
  req.grad_accum = opt_.grad_accum;
  req.threads = opt_.threads;
  req.world_size = world;
  // Throughput (and a kernel's time) is only comparable when nothing else shares the host.
  // A gate run that names a pair is that pair's candidate side (evaluate()).
  req.exclusive = p.purpose == "speed_base" || p.purpose == "speed_cand" || p.purpose == "final_base" ||
                  p.purpose == "final_cand" || p.purpose == "noise_a" || p.purpose == "noise_b" ||
                  p.kernel.has_value() ||
                  (p.purpose == "candidate" && !p.paired_with.empty());
  req.kernel = p.kernel;
  req.perturb = p.perturb;
  req.name = fmt::format("sg-c{}-t{}", campaign_id_, out.trial_id);
  req.switch_env = config_env(c, manifest_);
  req.dir = (std::filesystem::path(runs_dir_) / fmt::format("c{}", campaign_id_) / fmt::format("t{}", out.trial_id)).string();
  req.deadline = std::chrono::milliseconds(static_cast<long long>(opt_.trial_deadline_s * 1000));
  const std::int64_t tid = out.trial_id;
  // A heartbeat's pid names a process on this host only for local trials.
  bool pgid_stored = executor_->name() != "local";
  req.on_heartbeat = [&, tid](const std::string& hb) {
    try {
      if (!pgid_stored) {
        json j = json::parse(hb, nullptr, false);
        if (j.is_object() && j.contains("pid") && j["pid"].is_number_integer()) {
          store.set_trial_pgid(tid, ::getpgid(j["pid"].get<int>()));
          pgid_stored = true;
        }
      }
      store.heartbeat(tid, hb);
    } catch (const std::exception& e) {
      spdlog::warn("heartbeat not recorded: {}", e.what());
    }
  };
  req.on_submitted = [&, tid](const std::string& job_id) { set_trial_launch(store, tid, "", "", world, job_id); };
  // The trainer's group is in the store before it can run (the start handshake), so a
  // controller killed at any moment leaves a group the next one can end.
  req.on_started = [&, tid](int pgid) {
    store.set_trial_pgid(tid, pgid);
    pgid_stored = true;
  };
  TrialOutcome o = executor_->run(req);
  TrialFinish f = finish_from(o, req.dir);
  if (o.result) {
    if (o.result->fingerprint.is_object()) {
      f.environment_id = store.upsert_environment(fingerprint_hash(o.result->fingerprint), o.result->fingerprint);
    }
  }
  store.finish_trial(out.trial_id, f);
  set_trial_launch(store, out.trial_id, o.executor, o.slots, world, o.job_id);
  out.failure = o.failure;
  out.reason = o.reason;
  out.result = std::move(o.result);
  return out;
}

void CampaignEvaluator::run_batch(const std::vector<Plan>& plans) {
  const int capacity = executor_->capacity(opt_.trial_world_size);
  if (capacity <= 1) return;
  std::vector<std::pair<Plan, std::string>> todo;
  std::set<std::string> keys;
  for (const auto& p : plans) {
    std::string key = key_of(p);
    if (!keys.insert(key).second) continue;
    if (warm_start_) warm_start_(p.purpose, key);
    if (stored(store_, key)) continue;
    if (!budget_left(static_cast<int>(todo.size()))) break;  // the sequential part stops at the same point
    todo.emplace_back(p, std::move(key));
  }
  if (todo.size() < 2) return;  // nothing to overlap: the sequential part runs it
  trials_run_ += static_cast<int>(todo.size());
  progress(fmt::format("{} trials side by side ({} slots)", todo.size(), capacity));
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> workers;
  const std::size_t n = std::min(todo.size(), static_cast<std::size_t>(capacity));
  for (std::size_t w = 0; w < n; ++w) {
    workers.emplace_back([&] {
      try {
        Store store(opt_.db_path);  // one connection per thread
        for (std::size_t i = next++; i < todo.size(); i = next++) {
          const auto& [plan, key] = todo[i];
          Run r = execute(store, plan, key);
          if (r.failure) {
            spdlog::warn("trial {} ({} {}): {}: {}", r.trial_id, plan.purpose, config_label(plan.config),
                         to_string(*r.failure), r.reason);
          }
        }
      } catch (const std::exception& e) {
        // The sequential part runs whatever did not finish here.
        spdlog::error("parallel trial worker stopped: {}", e.what());
      }
    });
  }
  for (auto& w : workers) w.join();
}

std::optional<KernelTrialResult> CampaignEvaluator::time_kernels(const std::string& family,
                                                                 const std::vector<std::string>& variants) {
  Plan plan;
  plan.purpose = kKernelTimingPurpose;
  plan.micro_batch = target_micro_batch_;  // the shapes the presets are for
  plan.kernel = KernelTrialSpec{family, variants, kKernelTrialRepeats};
  const std::string key = key_of(plan);
  if (warm_start_) warm_start_(plan.purpose, key);  // shared campaigns reserve kernel trials too
  std::optional<Run> done = stored(store_, key);
  if (!done) {
    check_budget();
    ++trials_run_;
    progress("kernel trial " + family);
    done = execute(store_, plan, key);
  }
  if (done->failure || !done->result) {
    spdlog::warn("kernel trial {} ({}): {}: {}", done->trial_id, family,
                 done->failure ? to_string(*done->failure) : "no result", done->reason);
    return std::nullopt;
  }
  KernelTrialParse k = parse_kernel_trial_text(done->result->raw.dump());
  if (!k.result) return std::nullopt;  // parsed once already; cannot differ
  std::vector<KernelTimingRow> rows;
  for (const auto& v : k.result->variants) {
    rows.push_back({0, campaign_id_, done->trial_id, family, v.params, k.result->micro_batch, v.fwd_us, v.fwdbwd_us,
                    v.matches_plain});
  }
  store_.add_kernel_timings(rows);
  return k.result;
}

void CampaignEvaluator::prefetch(const std::vector<Config>& configs, int steps, Measure measure) {
  if (executor_->capacity(opt_.trial_world_size) <= 1) return;
  const Baseline& base = baseline(steps);
  std::vector<Plan> gate_runs, probes;
  std::vector<Config> valid;
  for (const auto& c : configs) {
    if (c.empty() || !validate_config(c, manifest_).empty()) continue;
    valid.push_back(c);
    gate_runs.push_back({"candidate", c, opt_.seeds.front(), steps, micro_batch_, 0, ""});
  }
  run_batch(gate_runs);
  if (measure == Measure::speed_pairs) return;
  // The memory probes of the candidates that pass the gate (the next independent step).
  for (const auto& c : valid) {
    auto done = stored(store_, key_of({"candidate", c, opt_.seeds.front(), steps, micro_batch_, 0, ""}));
    if (!done || !done->result) continue;
    if (gate(c, *done->result, base).pass) probes.push_back({"memory_probe", c, opt_.seeds.front(), opt_.screen_steps, probe_micro_batch_, 0, ""});
  }
  run_batch(probes);
}

Verdict CampaignEvaluator::gate(const Config& config, const TrialResult& result, const Baseline& base) const {
  const bool bitwise = deterministic_.value_or(false) && all_bitwise(config, manifest_);
  return bitwise ? bitwise_equal(result, base.s0) : within_tolerance(result, base.s0, base.bands);
}

std::optional<Projection> CampaignEvaluator::project(const Config& c, const TrialResult& at_mb,
                                                     std::vector<std::int64_t>& ids, Run* probe_out, int* probe_mb_out) {
  const int probe_steps = opt_.screen_steps;
  int probe_mb = probe_micro_batch_;
  Run probe = run("memory_probe", c, opt_.seeds.front(), probe_steps, probe_mb, 0);
  ids.push_back(probe.trial_id);
  if (!probe.result && probe.failure == Disposition::oom && probe_mb != micro_batch_ * 2) {
    // The target does not fit this device unsharded (it may fit the target's sharded
    // world): project from the line through the measured micro-batch and twice it.
    spdlog::info("memory probe at the target micro-batch {} ran out of memory; probing at {}", probe_mb, micro_batch_ * 2);
    probe_mb = micro_batch_ * 2;
    probe = run("memory_probe", c, opt_.seeds.front(), probe_steps, probe_mb, 0);
    ids.push_back(probe.trial_id);
  }
  *probe_mb_out = probe_mb;
  *probe_out = probe;
  if (!probe.result) {
    probe_out->reason = "memory probe at micro-batch " + std::to_string(probe_mb) + ": " + probe.reason;
    return std::nullopt;
  }
  ProjectionInputs in;
  in.points = {{micro_batch_, at_mb.peak_allocated_max(), at_mb.peak_reserved_max(), at_mb.phase_peak_allocated},
               {probe_mb, probe.result->peak_allocated_max(), probe.result->peak_reserved_max(),
                probe.result->phase_peak_allocated}};
  in.breakdown = at_mb.breakdown;
  if (probe.result->device != "cpu") {
    in.fragmentation = std::max(0.0, probe.result->peak_reserved_max() - probe.result->peak_allocated_max());
  }
  in.target_micro_batch = target_micro_batch_;
  in.world_size = opt_.target_world_size;
  in.zero_stage = opt_.zero_stage;
  Projection p = project_peak(in);
  ProjectionRow row;
  row.campaign_id = campaign_id_;
  row.config_key = config_key(c);
  row.target_micro_batch = in.target_micro_batch;
  row.world_size = in.world_size;
  row.zero_stage = in.zero_stage;
  row.inputs = p.to_json(in);
  row.projected_bytes = p.peak_bytes;
  if (in.world_size == 1) {
    // The target was measured on the device at hand: store the projection error.
    for (const auto& pt : in.points) {
      if (pt.micro_batch == in.target_micro_batch && pt.peak_bytes > 0) {
        row.measured_bytes = pt.peak_bytes + in.fragmentation;
        row.relative_error = (p.peak_bytes - *row.measured_bytes) / *row.measured_bytes;
      }
    }
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
    if (it != e.config.end()) store_.add_kernel_trial(campaign_id_, f.name, json{{"params", it->second}}, e.id);
  }
  store_.set_trial_disposition(e.trial_ids, e.disposition);
  if (e.accepted() && e.paired()) best_speedup_ = std::max(best_speedup_, e.speedup);
  progress(fmt::format("{} {}", to_string(e.disposition), config_label(e.config)));
  return e;
}

Evaluation CampaignEvaluator::evaluate(const Config& config, int steps, const std::string& strategy, Measure measure) {
  Evaluation e;
  e.config = config;
  e.steps = steps;
  e.strategy = strategy;
  if (std::string err = validate_config(config, manifest_); !err.empty()) {
    e.disposition = Disposition::crash;
    e.reason = "invalid configuration: " + err;
    return finish(e);
  }
  const Baseline& base = baseline(steps);
  const bool bitwise = deterministic_.value_or(false) && all_bitwise(config, manifest_);
  e.gate_class = bitwise ? "bitwise" : "tolerance";

  if (config.empty()) {
    e.trial_ids = base.trial_ids;
    e.disposition = Disposition::accepted;
    e.speedup = 1.0;
    e.samples_per_s = base.s0.samples_per_s;
    Run probe;
    int probe_mb = 0;
    auto p = project(config, base.s0, e.trial_ids, &probe, &probe_mb);
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

  // Trials one at a time (one GPU, a CPU host, Slurm's default): the gate run doubles as the
  // candidate's side of the first speed pair, timed alone like any speed run, and the pair's
  // baseline side runs right after it once it passed (nothing is spent on a candidate that
  // fails the gate). The separate speed run it replaces had the same configuration, seed,
  // steps and micro-batch; the gate run only had no baseline next to it. Such a gate run
  // names its pair in its key (paired_with), so a gate run timed side by side (prefetch with
  // parallel slots, whose pairs run on their own) or one stored by another pairing never
  // stands in for it.
  const std::string pair = config_key(config);
  if (measure == Measure::target_probe && !probes_at_target()) measure = Measure::full;  // no speed without pairs
  const bool pairs = measure != Measure::target_probe;
  // A drop compared at the target (no pairs now) names no pair: its gate run would otherwise
  // stand in for the candidate side of a pair whose baseline side runs minutes later, when
  // the drop is taken and evaluated in full (which then runs its own gate run, next to it).
  const bool gate_times_pair = pairs && opt_.repeats >= 1 && executor_->capacity(opt_.trial_world_size) <= 1;
  Run cand = run("candidate", config, opt_.seeds.front(), steps, micro_batch_, 0, gate_times_pair ? pair : "");
  e.trial_ids.push_back(cand.trial_id);
  if (!cand.result) {
    e.disposition = *cand.failure;
    e.reason = cand.reason;
    return finish(e);
  }
  Verdict v = gate(config, *cand.result, base);
  if (v.pass && !bitwise && steps == opt_.steps && opt_.horizon_factor > 1) {
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
    first_base = run("speed_base", {}, opt_.seeds.front(), steps, micro_batch_, 0, pair);
    e.trial_ids.push_back(first_base->trial_id);
  }
  std::optional<Projection> p;
  if (measure != Measure::speed_pairs) {
    Run probe;
    int probe_mb = 0;
    p = project(config, *cand.result, e.trial_ids, &probe, &probe_mb);
    if (!p) {
      e.disposition = probe.failure.value_or(Disposition::crash);
      e.reason = probe.reason;
      return finish(e);
    }
    if (probe_mb == target_micro_batch_ && baseline_target_samples_per_s_ > 0) {
      e.target_speedup = probe.result->samples_per_s / baseline_target_samples_per_s_;
    }
    e.projected_peak_bytes = p->peak_bytes;
    double max_budget = 0;
    for (const auto& b : opt_.budgets) max_budget = std::max(max_budget, static_cast<double>(b.bytes));
    if (!opt_.budgets.empty() && p->peak_bytes > max_budget) {
      e.disposition = Disposition::pruned;
      e.reason = memory_fits(p->peak_bytes, max_budget).reason;
      return finish(e);
    }
  } else {
    e.projected_peak_bytes = std::nan("");  // on no frontier, fits no budget
  }
  if (!pairs) {
    // Speed from the probe at the target alone: one unpaired run against the baseline's.
    e.speedup = e.spread = std::nan("");
    e.samples_per_s = cand.result->samples_per_s;  // its gate run, unpaired
    if (std::isnan(e.target_speedup)) {
      e.disposition = Disposition::accepted;
      e.reason = v.reason + "; no speed: the memory probe did not run at the target micro-batch";
      return finish(e);
    }
    const bool faster = e.target_speedup >= 1.0 + opt_.min_effect;
    e.disposition = faster ? Disposition::accepted : Disposition::slower;
    e.reason = fmt::format("{}; {:.3f}x the baseline at micro-batch {} (memory probes, unpaired; not paired at {})",
                           v.reason, e.target_speedup, target_micro_batch_, micro_batch_);
    return finish(e);
  }
  SpeedOutcome speed = measure_speed(config, steps, cand, first_base, e);
  if (!speed.interval) return finish(e);
  const SpeedInterval& s = *speed.interval;
  const bool memory_trade = p && has_memory_switch(config, manifest_) && baseline_projected_ > 0 &&
                            p->peak_bytes < baseline_projected_ * (1.0 - kNoiseThreshold);
  const std::string speed_text = fmt::format("{} (threshold {:.3f}x)", s.text(), 1.0 + opt_.min_effect);
  if (s.call == SpeedCall::faster) {
    e.disposition = Disposition::accepted;
    e.reason = v.reason + "; faster: " + speed_text + (p ? "" : "; memory not probed");
  } else if (memory_trade) {
    e.disposition = Disposition::accepted;
    e.reason = fmt::format("{}; memory trade-off: projected peak {:.1f} % of baseline; {}", v.reason,
                           100.0 * p->peak_bytes / baseline_projected_, speed_text);
  } else if (s.call == SpeedCall::not_faster) {
    e.disposition = Disposition::slower;
    e.reason = v.reason + "; not faster: " + speed_text;
  } else {
    e.disposition = Disposition::inconclusive;
    e.reason = fmt::format("{}; inconclusive at the cap of {} pairs: {}", v.reason, opt_.max_repeats, speed_text);
  }
  Evaluation done = finish(e);
  for (auto& row : speed.pairs) row.evaluation_id = done.id;
  store_.set_speed_pairs(done.id, speed.pairs);
  return done;
}

}  // namespace sg::agent
