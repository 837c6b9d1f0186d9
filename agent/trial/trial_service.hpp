// The trial service: the one road of a trial. Looks a planned trial up in the store by
// its key (a resumed campaign re-uses every finished trial), else claims it, runs it
// through the executor and records its outcome. The only caller of executors and of the
// store's trial methods (claim, heartbeat, finish, dispositions, stale trials).
//
// Parallel dispatch (run_batch): when the executor can run several trials at once, plans
// that do not depend on each other run side by side, each worker thread on its own Store
// connection (SQLite serialises the writes: WAL, BEGIN IMMEDIATE); the sequential run()
// then finds them finished in the store.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/common/disposition.hpp"
#include "agent/protocol/config.hpp"
#include "agent/protocol/manifest.hpp"
#include "agent/protocol/result.hpp"
#include "agent/runner/executor.hpp"
#include "agent/store/store.hpp"

namespace sg::agent {

// The purpose of a kernel-level trial (its stored result is a kernel trial's header).
inline constexpr const char* kKernelTimingPurpose = "kernel_timing";

// One trial as planned: everything its key names.
struct TrialPlan {
  std::string purpose;
  Config config;
  int seed = 0, steps = 0, micro_batch = 1, repeat = 0;
  std::string paired_with;
  std::optional<KernelTrialSpec> kernel;  // a kernel trial (purpose kernel_timing)
  double perturb = 0;                     // > 0: a rounding-band run (--perturb)
};

// A trial's outcome: its row and either a parsed result or a failure.
struct TrialRun {
  std::int64_t trial_id = 0;
  std::optional<Disposition> failure;
  std::string reason;
  std::optional<TrialResult> result;
};

// What every trial of a campaign shares (from CampaignOptions).
struct TrialSettings {
  std::string trainer, workload, size;
  int grad_accum = 1;
  int threads = 2;
  int world_size = 1;  // ranks per trial; part of the key when > 1
  double deadline_s = 600;
  std::string db_path;   // worker threads open their own connection
  std::string runs_dir;  // per-trial directories (the executor's shared_dir when set)
  ExecutorOptions executor;
  int budget_trials = 0;      // trainer runs at most; 0 = unlimited
  double budget_minutes = 0;  // 0 = unlimited
};

// Refuses (UsageError) an executor that cannot run here, before anything is written.
void check_executor(const ExecutorOptions& options, int world_size);

class TrialService {
 public:
  TrialService(Store& store, std::int64_t campaign_id, const Manifest& manifest,
               TrialSettings settings);

  // The trial's key: purpose, configuration, seed, steps, micro-batch, grad-accum,
  // threads, repeat, pair, and where set world size, perturbation and kernel variants.
  std::string key_of(const TrialPlan& p) const;
  // The stored outcome of a finished trial with this plan, if any.
  std::optional<TrialRun> stored(const TrialPlan& p);
  // The stored outcome, else runs the trial now (counted against the budget; logs a
  // failure). Throws BudgetExhausted when the budget is spent.
  TrialRun run(const TrialPlan& p);
  // Runs the plans not finished yet side by side (no-op unless the executor has several
  // slots and at least two are to run); the outcomes land in the store.
  void run_batch(const std::vector<TrialPlan>& plans);

  // Whether one trial after `more` others still fits the budget.
  bool budget_left(int more) const;
  // Trials the executor runs at once.
  int capacity() const;
  int trials_run() const { return trials_run_; }
  double elapsed_s() const;

  // Marks the campaign's trials RUNNING under a dead controller stale (re-queued) and
  // cancels their executor jobs.
  void requeue_stale(double stale_after_s);
  // An evaluation's verdict on its trials.
  void set_disposition(const std::vector<std::int64_t>& trial_ids, Disposition d);

  // Called before each trial with its purpose and key, whether stored or not: it may
  // copy an identical finished trial into this campaign (nightly's warm start) or wait
  // for another controller running the key (shared campaigns).
  using BeforeTrial = std::function<void(const std::string& purpose, const std::string& key)>;
  void set_before_trial(BeforeTrial hook) { before_trial_ = std::move(hook); }
  // Called with a line of text before a trainer run starts (the progress line).
  void set_on_progress(std::function<void(const std::string&)> hook) {
    on_progress_ = std::move(hook);
  }

 private:
  std::optional<TrialRun> stored(Store& store, const std::string& key);
  // Claims, runs and records one trial through `store` (the caller's connection).
  TrialRun execute(Store& store, const TrialPlan& p, const std::string& key);
  TrialRequest request(Store& store, const TrialPlan& p, std::int64_t trial_id);
  void check_budget() const;

  Store& store_;
  std::int64_t campaign_id_;
  const Manifest& manifest_;
  TrialSettings settings_;
  std::unique_ptr<Executor> executor_;
  int trials_run_ = 0;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  BeforeTrial before_trial_;
  std::function<void(const std::string&)> on_progress_;
};

}  // namespace sg::agent
