#include "agent/cli/campaign_options.hpp"

#include <sched.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "agent/cli/command.hpp"
#include "agent/common/errors.hpp"
#include "agent/common/units.hpp"
#include "agent/runner/executor.hpp"
#include "agent/search/strategy.hpp"

namespace sg::agent {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxBudgetName = 64;

std::string not_empty(const std::string& s) { return s.empty() ? "must not be empty" : ""; }

// An option checked by `check` whose default --help shows.
template <class T>
CLI::Option* add_checked(CLI::App* app, const std::string& name, T& value,
                         const std::string& description, const CLI::Validator& check) {
  return app->add_option(name, value, description)->check(check)->capture_default_str();
}

// The nearest existing ancestor of `p` (p itself when it exists).
fs::path existing_ancestor(fs::path p) {
  p = fs::absolute(p).lexically_normal();
  std::error_code ec;
  while (!fs::exists(p, ec) && p.has_parent_path() && p.parent_path() != p) p = p.parent_path();
  return p;
}

}  // namespace

CLI::Validator number_check(bool zero_ok) {
  return CLI::Validator(
      [zero_ok](std::string& s) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(s, v))
          return "Value " + s.substr(0, 40) + " is not a number";
        if (!std::isfinite(v) || v < 0 || (v == 0 && !zero_ok)) {
          return "Value " + s.substr(0, 40) +
                 (zero_ok ? " is not a finite number >= 0" : " is not a finite number > 0");
        }
        return "";
      },
      zero_ok ? "NONNEGATIVE" : "POSITIVE");
}

CLI::Validator positive_number() { return number_check(false); }
CLI::Validator non_negative_number() { return number_check(true); }

int host_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
}

void check_db_path(const std::string& flag, const std::string& path) {
  if (path.empty()) throw UsageError(flag + " must not be empty");
  if (path == ":memory:" || path.rfind("file:", 0) == 0) {
    throw UsageError(flag + " '" + path +
                     "': give a database file path (in-memory databases and URIs are refused)");
  }
  std::error_code ec;
  if (fs::is_directory(path, ec) || path.back() == '/')
    throw UsageError(flag + " '" + path + "' is a directory, not a file");
  if (fs::exists(path, ec) && !fs::is_regular_file(path, ec)) {
    throw UsageError(flag + " '" + path + "' is not a regular file");
  }
  const fs::path parent = fs::absolute(path).parent_path();
  if (!fs::exists(parent, ec))
    check_output_dir(flag, parent.string());
  else if (!fs::is_directory(parent, ec))
    throw UsageError(flag + " '" + path + "': " + parent.string() + " is not a directory");
}

void check_output_dir(const std::string& flag, const std::string& dir) {
  if (dir.empty()) throw UsageError(flag + " must not be empty");
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw UsageError(flag + " '" + dir + "' is not a directory");
  const fs::path base = existing_ancestor(dir);
  if (!fs::is_directory(base, ec))
    throw UsageError(flag + " '" + dir + "': " + base.string() + " is not a directory");
  // access() says yes to root on read-only or virtual file systems (/proc): create and
  // remove a probe instead.
  std::string probe = (base / ".speedgate-probe-XXXXXX").string();
  if (::mkdtemp(probe.data()) == nullptr) {
    throw UsageError(flag + " '" + dir + "': cannot create anything in " + base.string() + ": " +
                     std::strerror(errno));
  }
  ::rmdir(probe.c_str());
}

namespace {

// The speed, gate, search and per-trial time options (after the measurement options, in
// --help's order).
void add_judging_options(CLI::App* app, CampaignOptions& o) {
  add_checked(app, "--repeats", o.speed.repeats,
              "paired ABAB speed repeats before the first verdict (an interval needs two)",
              positive_number());
  add_checked(
      app, "--max-repeats", o.speed.max_repeats,
      "pairs at most while the speed interval straddles 1 + --min-effect; then 'inconclusive'",
      positive_number());
  app->add_option(
         "--min-effect", o.speed.min_effect,
         "smallest speedup worth accepting: the one-sided 95 % lower bound must clear 1 + this")
      ->capture_default_str();
  add_checked(app, "--noise-pairs", o.speed.noise_pairs,
              "A/A baseline pairs per step budget that measure this host's noise (0 = none)",
              non_negative_number());
  app->add_option("--perturb-eps", o.gate.perturb_eps,
                  "relative perturbation of the initial parameters that measures the rounding band "
                  "(protocol --perturb; 0 = judge tolerance switches by the seed band alone)")
      ->capture_default_str();
  app->add_option("--rounding-factor", o.gate.rounding_factor,
                  "tolerance class: allowed multiple of the rounding band")
      ->capture_default_str();
  add_checked(app, "--horizon-factor", o.gate.horizon_factor,
              "tolerance class: confirm at this many times --steps before a preset (1 = none)",
              positive_number());
  add_checked(app, "--prune-rounds", o.search.prune_rounds,
              "rounds of drops strategy prune may take (0 = until no drop is taken; 1 = one round, "
              "then the harmless drops together or the best one)",
              non_negative_number());
  add_checked(app, "--band-factor", o.gate.band_factor,
              "tolerance class: allowed multiple of the seed band (outer bound)",
              positive_number());
  add_checked(app, "--trial-timeout", o.trial.deadline_s,
              "seconds per trial before SIGTERM/SIGKILL", positive_number());
  std::string strategies;
  for (const auto& n : StrategyRegistry::instance().names()) strategies += " " + n;
  app->add_option("--plan", o.search.plan, "strategies to run in order; available:" + strategies)
      ->delimiter(',');
}

}  // namespace

void add_campaign_options(CLI::App* app, CampaignOptions& o, std::vector<std::string>& budgets) {
  app->add_option("--workload", o.workload, "workload from the trainer manifest (e.g. wam)")
      ->required();
  app->add_option("--size", o.size, "size from the trainer manifest (e.g. tiny)")->required();
  app->add_option("--db", o.db_path, "SQLite database file")
      ->check(not_empty)
      ->capture_default_str();
  app->add_option("--memory-budget", budgets,
                  "NAME=SIZE, repeatable; one preset per budget (IEC units: B KiB MiB GiB TiB)")
      ->default_str("fast=141GiB fast_80gb=80GiB");
  app->add_option("--target-micro-batch", o.memory.target_micro_batch,
                  "micro-batch per GPU to project memory for (default: the size's default)")
      ->check(positive_number());
  add_checked(app, "--target-world-size", o.memory.target_world_size, "GPUs to project memory for",
              positive_number());
  add_checked(app, "--zero-stage", o.memory.zero_stage, "ZeRO stage (0-3) for the projection",
              CLI::Range(0, 3));
  app->add_option("--micro-batch", o.trial.micro_batch,
                  "measured micro-batch (default: the size's default; the memory probe runs 2x)")
      ->check(positive_number());
  app->add_flag(
      "--probe-at-target", o.memory.probe_at_target,
      "run the memory probe at --target-micro-batch instead of 2x --micro-batch (the projection "
      "then "
      "measures the target's activations; a probe that runs out of memory falls back to 2x)");
  add_checked(app, "--grad-accum", o.trial.grad_accum, "gradient accumulation steps",
              positive_number());
  app->add_option("--trainer", o.trainer,
                  "trainer executable (default: speedgate-train next to speedgate)")
      ->check(not_empty);
  add_checked(app, "--steps", o.trial.steps, "full (confirmation) step budget", positive_number());
  app->add_option("--screen-steps", o.trial.screen_steps,
                  "short step budget for screening (default max(3, steps/2))")
      ->check(positive_number());
  app->add_option("--seeds", o.trial.seeds, "baseline band seeds, each once; the first is s0")
      ->delimiter(',')
      ->check(not_empty)
      ->capture_default_str();
  o.trial.threads = 0;  // auto, resolved by apply_campaign_options (host_threads)
  app->add_option(
         "--threads", o.trial.threads,
         "trainer intra-op threads (part of the fingerprint; default: 1 on a CPU host with <= 2 "
         "cores, half the cores on a larger one, 2 on a GPU host)")
      ->check(positive_number());
  add_judging_options(app, o);
  add_executor_options(app, o);
}

void add_executor_options(CLI::App* app, CampaignOptions& o) {
  add_checked(app, "--executor", o.executor.kind,
              "where trials run: local (this host, GPU or CPU slots) or slurm (one sbatch job "
              "per trial)",
              CLI::IsMember({"local", "slurm"}));
  add_checked(app, "--trial-world-size", o.trial.world_size,
              "data-parallel ranks per trial (local: W GPU slots, MASTER_PORT chosen free; "
              "slurm: srun -n W)",
              positive_number());
  app->add_option("--gpus", o.executor.gpus,
                  "local GPU slots (default: the GPUs `nvidia-smi -L` lists, or "
                  "CUDA_VISIBLE_DEVICES; 0 = CPU host)")
      ->check(non_negative_number());
  app->add_option(
         "--parallel-trials", o.executor.parallel_trials,
         "trials at once: local GPU host default = slots / trial world size (at most that), "
         "CPU host and slurm default 1; speed pairs always run alone")
      ->check(positive_number());
  app->add_option("--slurm-partition", o.executor.slurm_partition,
                  "slurm: partition (default: the cluster's default)");
  app->add_option(
      "--shared-dir", o.executor.shared_dir,
      "slurm: trial directories (job script, logs, result, heartbeat) on a path every node sees "
      "(default: the runs directory next to the database)");
  add_checked(app, "--slurm-gpus-per-rank", o.executor.slurm_gpus_per_rank,
              "slurm: GPUs requested per rank with --gpus (0 = CPU-only cluster)",
              non_negative_number());
}

int host_threads(int cores, int gpus) {
  if (gpus > 0) return 2;  // the GPU does the work; two threads feed it
  if (cores <= 2)
    return 1;  // two OpenMP threads on two busy cores fight (290-716 ms vs 84 ms steps)
  return std::max(1, cores / 2);  // leave room for the controller and concurrent trials
}

void apply_campaign_options(CampaignOptions& o, std::vector<std::string> budgets) {
  if (budgets.empty()) budgets = {"fast=141GiB", "fast_80gb=80GiB"};
  for (const auto& b : budgets) {
    NamedBudget nb = parse_named_budget(b);
    if (nb.name.size() > kMaxBudgetName) {
      throw UsageError(fmt::format("--memory-budget name '{}...' is longer than {} characters",
                                   nb.name.substr(0, 20), kMaxBudgetName));
    }
    for (const auto& have : o.memory.budgets) {
      if (have.name == nb.name) throw UsageError("--memory-budget " + nb.name + " given twice");
    }
    o.memory.budgets.push_back(nb);
  }
  if (o.trainer.empty()) o.trainer = default_trainer_path();
  if (o.trial.threads == 0) {
    const int cores = static_cast<int>(std::thread::hardware_concurrency());
    const int gpus = o.executor.gpus >= 0 ? o.executor.gpus : detect_gpus();
    o.trial.threads = host_threads(cores, gpus);
    spdlog::info("--threads {} (default for a {} host with {} cores; pass --threads to choose)",
                 o.trial.threads, gpus > 0 ? "GPU" : "CPU", cores);
  }
  int s = o.trial.screen_steps == 0 ? std::max(std::min(3, o.trial.steps), o.trial.steps / 2)
                                    : o.trial.screen_steps;
  if (s > o.trial.steps) throw UsageError("--screen-steps must not exceed --steps");
  CampaignOptions filled = o;
  filled.trial.screen_steps = s;
  filled.validate();
  std::set<int> seen;
  for (int seed : o.trial.seeds) {
    if (!seen.insert(seed).second)
      throw UsageError(fmt::format("--seeds: seed {} is given twice", seed));
  }
  if (o.executor.kind == "local") {
    const int cpus = host_cpus();
    if (o.trial.threads > cpus) {
      throw UsageError(
          fmt::format("--threads {} is more than this host's {} CPUs", o.trial.threads, cpus));
    }
    const bool cpu_slots = o.executor.gpus == 0 || (o.executor.gpus < 0 && detect_gpus() == 0);
    if (cpu_slots && o.trial.world_size > cpus) {
      throw UsageError(fmt::format(
          "--trial-world-size {} is more than this host's {} CPUs (one rank process each)",
          o.trial.world_size, cpus));
    }
  }
  check_db_path("--db", o.db_path);
  if (!o.runs_dir.empty()) check_output_dir("--runs-dir", o.runs_dir);
}

}  // namespace sg::agent
