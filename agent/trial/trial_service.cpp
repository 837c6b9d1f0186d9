#include "agent/trial/trial_service.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <set>
#include <thread>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "agent/common/errors.hpp"
#include "agent/protocol/kernel_trial_result.hpp"
#include "agent/runner/trial.hpp"
#include "agent/store/trial_launch.hpp"
#include "common/result/result_json.hpp"

namespace sg::agent {

using nlohmann::json;

namespace {

// The store's row for a trial's outcome.
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
  if (!o.result) return f;
  const TrialResult& r = *o.result;
  f.result_json = r.raw.dump();
  f.samples_per_s = r.samples_per_s;
  f.tokens_per_s = r.tokens_per_s;
  f.peak_allocated = r.peak_allocated_max();
  f.peak_reserved = r.peak_reserved_max();
  f.eval_loss = r.eval_loss;
  f.eval_loss_bits = r.has_eval ? sg::bits_hex(r.eval_loss_bits) : std::string();
  f.param_digest = r.param_digest;
  f.optimizer_digest = r.optimizer_digest;
  if (r.raw.contains("memory"))
    f.breakdown = r.raw.at("memory").at("breakdown");  // kernel trials have none
  for (const auto& s : r.step_records) {
    f.steps.push_back({s.step, s.loss, sg::bits_hex(s.loss_bits), s.grad_norm,
                       sg::bits_hex(s.grad_norm_bits), s.seconds});
  }
  return f;
}

// Throughput (and a kernel's time) is only comparable when nothing else shares the host.
// A gate run that names a pair is that pair's candidate side (CampaignEvaluator::evaluate).
bool exclusive(const TrialPlan& p) {
  static const std::set<std::string> timed = {"speed_base", "speed_cand", "final_base",
                                              "final_cand", "noise_a",    "noise_b"};
  return timed.count(p.purpose) > 0 || p.kernel.has_value() ||
         (p.purpose == "candidate" && !p.paired_with.empty());
}

void warn_failed(const TrialRun& r, const TrialPlan& p) {
  spdlog::warn("trial {} ({} {}): {}: {}", r.trial_id, p.purpose, config_label(p.config),
               to_string(*r.failure), r.reason);
}

}  // namespace

void check_executor(const ExecutorOptions& options, int world_size) {
  make_executor(options, world_size);
}

TrialService::TrialService(Store& store, std::int64_t campaign_id, const Manifest& manifest,
                           TrialSettings settings)
    : store_(store),
      campaign_id_(campaign_id),
      manifest_(manifest),
      settings_(std::move(settings)) {
  executor_ = make_executor(settings_.executor, settings_.world_size);
  if (!settings_.executor.shared_dir.empty()) settings_.runs_dir = settings_.executor.shared_dir;
}

std::string TrialService::key_of(const TrialPlan& p) const {
  std::string key = fmt::format("{}|{}|s{}|n{}|b{}|g{}|t{}|r{}|{}", p.purpose, config_key(p.config),
                                p.seed, p.steps, p.micro_batch, settings_.grad_accum,
                                settings_.threads, p.repeat, p.paired_with);
  if (settings_.world_size > 1 && !p.kernel) key += fmt::format("|w{}", settings_.world_size);
  if (p.perturb > 0) key += fmt::format("|p{:.17g}", p.perturb);
  if (p.kernel) {
    key += fmt::format("|k{}|rep{}", p.kernel->family, p.kernel->repeats);
    for (const auto& v : p.kernel->variants) key += "|" + v;
  }
  return key;
}

std::optional<TrialRun> TrialService::stored(const TrialPlan& p) {
  return stored(store_, key_of(p));
}

std::optional<TrialRun> TrialService::stored(Store& store, const std::string& key) {
  auto row = store.find_trial(campaign_id_, key);
  if (!row || row->state != "finished" || row->disposition == Disposition::stale)
    return std::nullopt;
  TrialRun out;
  out.trial_id = row->id;
  if (!row->run_ok) {
    out.failure = row->disposition.value_or(Disposition::crash);
    out.reason = row->reason;
    return out;
  }
  ResultParse p = row->purpose == kKernelTimingPurpose
                      ? parse_kernel_trial_as_result(row->result_json)
                      : parse_result_text(row->result_json);
  if (p.result) {
    out.result = std::move(p.result);
    return out;
  }
  out.failure = Disposition::invalid_result;
  out.reason = "stored result unreadable: " + p.error;
  return out;
}

TrialRun TrialService::run(const TrialPlan& p) {
  const std::string key = key_of(p);
  if (before_trial_) before_trial_(p.purpose, key);
  if (auto done = stored(store_, key)) return *done;
  check_budget();
  ++trials_run_;
  if (on_progress_) {
    on_progress_(p.kernel ? "kernel trial " + p.kernel->family
                          : fmt::format("{} {}", p.purpose, config_label(p.config)));
  }
  TrialRun out = execute(store_, p, key);
  if (out.failure && !p.kernel) warn_failed(out, p);  // a kernel trial's caller says what failed
  return out;
}

TrialRequest TrialService::request(Store& store, const TrialPlan& p, std::int64_t tid) {
  TrialRequest req;
  req.trainer = settings_.trainer;
  req.workload = settings_.workload;
  req.size = settings_.size;
  req.steps = p.steps;
  req.seed = p.seed;
  req.micro_batch = p.micro_batch;
  req.grad_accum = settings_.grad_accum;
  req.threads = settings_.threads;
  req.world_size = p.kernel ? 1 : settings_.world_size;
  req.exclusive = exclusive(p);
  req.kernel = p.kernel;
  req.perturb = p.perturb;
  req.name = fmt::format("sg-c{}-t{}", campaign_id_, tid);
  req.switch_env = config_env(p.config, manifest_);
  req.dir = (std::filesystem::path(settings_.runs_dir) / fmt::format("c{}", campaign_id_) /
             fmt::format("t{}", tid))
                .string();
  req.deadline = std::chrono::milliseconds(static_cast<long long>(settings_.deadline_s * 1000));
  // A heartbeat's pid names a process on this host only for local trials.
  auto pgid_stored = std::make_shared<bool>(executor_->name() != "local");
  req.on_heartbeat = [&store, tid, pgid_stored](const std::string& hb) {
    try {
      if (!*pgid_stored) {
        json j = json::parse(hb, nullptr, false);
        if (j.is_object() && j.contains("pid") && j["pid"].is_number_integer()) {
          store.set_trial_pgid(tid, ::getpgid(j["pid"].get<int>()));
          *pgid_stored = true;
        }
      }
      store.heartbeat(tid, hb);
    } catch (const std::exception& e) {
      spdlog::warn("heartbeat not recorded: {}", e.what());
    }
  };
  const int world = req.world_size;
  req.on_submitted = [&store, tid, world](const std::string& job_id) {
    set_trial_launch(store, tid, "", "", world, job_id);
  };
  // The trainer's group is in the store before it can run (the start handshake), so a
  // controller killed at any moment leaves a group the next one can end.
  req.on_started = [&store, tid, pgid_stored](int pgid) {
    store.set_trial_pgid(tid, pgid);
    *pgid_stored = true;
  };
  return req;
}

TrialRun TrialService::execute(Store& store, const TrialPlan& p, const std::string& key) {
  TrialRow t;
  t.campaign_id = campaign_id_;
  t.trial_key = key;
  t.purpose = p.purpose;
  t.config_key = config_key(p.config);
  t.config_json = json(p.config).dump();
  t.seed = p.seed;
  t.steps = p.steps;
  t.micro_batch = p.micro_batch;
  t.grad_accum = settings_.grad_accum;
  t.repeat = p.repeat;
  TrialRun out;
  out.trial_id = store.claim_trial(t);
  const TrialRequest req = request(store, p, out.trial_id);
  set_trial_launch(store, out.trial_id, executor_->name(), "", req.world_size, "");
  TrialOutcome o = executor_->run(req);
  TrialFinish f = finish_from(o, req.dir);
  if (o.result && o.result->fingerprint.is_object()) {
    f.environment_id =
        store.upsert_environment(fingerprint_hash(o.result->fingerprint), o.result->fingerprint);
  }
  store.finish_trial(out.trial_id, f);
  set_trial_launch(store, out.trial_id, o.executor, o.slots, req.world_size, o.job_id);
  out.failure = o.failure;
  out.reason = o.reason;
  out.result = std::move(o.result);
  return out;
}

void TrialService::run_batch(const std::vector<TrialPlan>& plans) {
  const int slots = capacity();
  if (slots <= 1) return;
  std::vector<std::pair<TrialPlan, std::string>> todo;
  std::set<std::string> keys;
  for (const auto& p : plans) {
    std::string key = key_of(p);
    if (!keys.insert(key).second) continue;
    if (before_trial_) before_trial_(p.purpose, key);
    if (stored(store_, key)) continue;
    if (!budget_left(static_cast<int>(todo.size())))
      break;  // the sequential part stops at the same point
    todo.emplace_back(p, std::move(key));
  }
  if (todo.size() < 2) return;  // nothing to overlap: the sequential part runs it
  trials_run_ += static_cast<int>(todo.size());
  if (on_progress_)
    on_progress_(fmt::format("{} trials side by side ({} slots)", todo.size(), slots));
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> workers;
  const std::size_t n = std::min(todo.size(), static_cast<std::size_t>(slots));
  for (std::size_t w = 0; w < n; ++w) {
    workers.emplace_back([&] {
      try {
        Store store(settings_.db_path);  // one connection per thread
        for (std::size_t i = next++; i < todo.size(); i = next++) {
          const auto& [plan, key] = todo[i];
          TrialRun r = execute(store, plan, key);
          if (r.failure) warn_failed(r, plan);
        }
      } catch (const std::exception& e) {
        // The sequential part runs whatever did not finish here.
        spdlog::error("parallel trial worker stopped: {}", e.what());
      }
    });
  }
  for (auto& w : workers) w.join();
}

double TrialService::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
}

bool TrialService::budget_left(int more) const {
  if (settings_.budget_trials > 0 && trials_run_ + more >= settings_.budget_trials) return false;
  if (settings_.budget_minutes > 0 && elapsed_s() / 60.0 >= settings_.budget_minutes) return false;
  return true;
}

void TrialService::check_budget() const {
  if (!budget_left(0)) throw BudgetExhausted();
}

int TrialService::capacity() const { return executor_->capacity(settings_.world_size); }

void TrialService::requeue_stale(double stale_after_s) {
  for (auto id : store_.mark_stale_and_requeue(campaign_id_, stale_after_s)) {
    spdlog::warn("trial {} was RUNNING under a dead controller: marked stale and re-queued", id);
    executor_->cancel_orphan(trial_job_id(store_, id));
  }
}

void TrialService::set_disposition(const std::vector<std::int64_t>& trial_ids, Disposition d) {
  store_.set_trial_disposition(trial_ids, d);
}

}  // namespace sg::agent
