#include "agent/runner/trial.hpp"

#include <signal.h>

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "agent/common/files.hpp"
#include "agent/common/interrupt.hpp"
#include "agent/common/json_limits.hpp"
#include "agent/protocol/kernel_trial_result.hpp"
#include "agent/runner/result_check.hpp"

namespace sg::agent {

std::optional<Failure> decode_outcome(const ProcessOutcome& p, const ResultParse& parsed) {
  if (!p.started) {
    return Failure{Disposition::crash, "trainer did not start: " + p.start_error};
  }
  if (p.interrupted) {
    return Failure{Disposition::killed,
                   std::string(kInterruptedReason) +
                       "the controller was told to stop; the trial re-runs on resume"};
  }
  if (p.deadline_hit) {
    return Failure{Disposition::timeout, "deadline exceeded; process group terminated"};
  }
  if (p.signaled) {
    if (p.signal == SIGKILL) {
      return Failure{Disposition::killed,
                     "killed by SIGKILL with no deadline pending (OOM killer or operator)"};
    }
    return Failure{Disposition::crash,
                   fmt::format("terminated by signal {} ({})", p.signal, ::strsignal(p.signal))};
  }
  const std::string detail = parsed.result ? parsed.result->error : std::string();
  switch (p.exit_code) {
    case 0:
      if (!parsed.result) {
        return Failure{Disposition::invalid_result, parsed.error};
      }
      if (parsed.result->status != "ok") {
        return Failure{Disposition::invalid_result,
                       "exit 0 but result status '" + parsed.result->status + "'"};
      }
      if (Problem bad = non_finite_value(*parsed.result)) {
        return Failure{Disposition::nan, "status ok but " + *bad};
      }
      return std::nullopt;
    case 2:
      return Failure{Disposition::crash,
                     "trainer rejected the input (exit 2)" + (detail.empty() ? "" : ": " + detail)};
    case 3:
      return Failure{Disposition::oom,
                     "out of memory (exit 3)" + (detail.empty() ? "" : ": " + detail)};
    case 4:
      return Failure{Disposition::nan, "non-finite loss or gradient norm (exit 4)" +
                                           (detail.empty() ? "" : ": " + detail)};
    default:
      return Failure{Disposition::crash, fmt::format("exit code {}", p.exit_code) +
                                             (detail.empty() ? "" : ": " + detail)};
  }
}

std::vector<std::pair<std::string, std::string>> trial_environment(const TrialRequest& req) {
  std::vector<std::pair<std::string, std::string>> env;
  for (auto& kv : inherited_env_without_switches()) {
    if (!is_launch_variable(kv.first)) env.push_back(std::move(kv));
  }
  for (const auto& kv : req.switch_env) env.push_back(kv);
  for (const auto& kv : req.launch_env) env.push_back(kv);
  return env;
}

bool is_launch_variable(const std::string& name) {
  static const char* const kNames[] = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                                       "MASTER_ADDR", "MASTER_PORT", "GROUP_RANK", "ROLE_RANK",
                                       "TORCHELASTIC_RUN_ID",
                                       // the trainer falls back to these under srun
                                       "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"};
  for (const char* n : kNames) {
    if (name == n) return true;
  }
  return false;
}

std::vector<std::string> trainer_args(const TrialRequest& req, const std::string& result_path,
                                      const std::string& heartbeat_file) {
  // Both commands name the target first and the files last.
  std::vector<std::string> args = {req.kernel ? "kernel-trial" : "run", "--workload", req.workload,
                                   "--size", req.size};
  auto add = [&](const char* flag, std::string value) {
    args.push_back(flag);
    args.push_back(std::move(value));
  };
  if (req.kernel) {
    add("--micro-batch", std::to_string(req.micro_batch));
    add("--family", req.kernel->family);
    add("--repeats", std::to_string(req.kernel->repeats));
  } else {
    add("--steps", std::to_string(req.steps));
    add("--seed", std::to_string(req.seed));
    add("--micro-batch", std::to_string(req.micro_batch));
    add("--grad-accum", std::to_string(req.grad_accum));
  }
  add("--threads", std::to_string(req.threads));
  add("--result", result_path);
  add("--heartbeat", heartbeat_file);
  if (req.kernel) {
    for (const auto& v : req.kernel->variants) add("--variant", v);
  } else if (req.perturb > 0) {  // only trainers whose manifest lists capability "perturb" get it
    add("--perturb", fmt::format("{:.17g}", req.perturb));
  }
  return args;
}

std::string read_heartbeat(const std::string& path) {
  std::string beat = read_file(path, kHeartbeatLimits.max_bytes).value_or("");
  if (json_limits_problem(beat, kHeartbeatLimits)) beat.clear();
  return beat;
}

ResultParse parse_trial_result(const TrialRequest& req, const std::string& path, double wall_s) {
  ResultParse p = req.kernel ? parse_kernel_trial_file_as_result(path) : parse_result_file(path);
  if (!p.result || p.result->status != "ok") return p;
  Problem mismatch;
  if (req.kernel) {
    KernelTrialParse k = parse_kernel_trial_text(p.result->raw.dump());
    mismatch = k.result ? kernel_result_mismatch(req, *k.result) : Problem(k.error);
  } else {
    mismatch = result_mismatch(req, *p.result, wall_s);
  }
  if (!mismatch) return p;
  return ResultParse{std::nullopt, *mismatch};
}

void set_failure(TrialOutcome& out, const std::optional<Failure>& failure) {
  out.failure = std::nullopt;
  if (!failure) return;
  out.failure = failure->disposition;
  out.reason = failure->reason;
}

void decode_trial(TrialOutcome& out, const ResultParse& parsed) {
  set_failure(out, decode_outcome(out.process, parsed));
  if (out.failure && out.ranks.size() > 1) {
    out.reason = fmt::format("rank {} of {}: {}", std::max(0, out.failed_rank), out.ranks.size(),
                             out.reason);
  }
}

std::string heartbeat_path(const TrialRequest& req) {
  return (std::filesystem::path(req.dir) / "heartbeat.json").string();
}

TrialOutcome prepare_trial_dir(const TrialRequest& req) {
  namespace fs = std::filesystem;
  fs::create_directories(req.dir);
  TrialOutcome out;
  out.result_path = (fs::path(req.dir) / "result.json").string();
  out.stdout_log = (fs::path(req.dir) / "stdout.log").string();
  out.stderr_log = (fs::path(req.dir) / "stderr.log").string();
  std::error_code ec;
  fs::remove(out.result_path, ec);
  fs::remove(heartbeat_path(req), ec);
  return out;
}

TrialOutcome run_trial(const TrialRequest& req) {
  namespace fs = std::filesystem;
  TrialOutcome out = prepare_trial_dir(req);
  const std::string heartbeat = heartbeat_path(req);
  const std::vector<std::pair<std::string, std::string>> base = trial_environment(req);
  const int world = std::max(1, req.world_size);
  std::vector<ProcessSpec> ranks(static_cast<std::size_t>(world));
  for (int r = 0; r < world; ++r) {
    ProcessSpec& spec = ranks[static_cast<std::size_t>(r)];
    spec.exe = req.trainer;
    spec.args = trainer_args(req, out.result_path, heartbeat);
    spec.env = base;
    if (world > 1) {
      for (const char* k : {"RANK", "LOCAL_RANK"}) spec.env.emplace_back(k, std::to_string(r));
      for (const char* k : {"WORLD_SIZE", "LOCAL_WORLD_SIZE"})
        spec.env.emplace_back(k, std::to_string(world));
    }
    // Rank 0 keeps the single-rank names, so every trial has stdout.log/stderr.log.
    const std::string suffix = r == 0 ? "" : fmt::format(".rank{}", r);
    spec.stdout_log = (fs::path(req.dir) / ("stdout" + suffix + ".log")).string();
    spec.stderr_log = (fs::path(req.dir) / ("stderr" + suffix + ".log")).string();
  }
  ProcessSpec& control = ranks.front();
  control.deadline = req.deadline;
  control.grace = req.grace;
  control.on_started = req.on_started;
  if (req.on_heartbeat) {
    control.on_tick = [&] { req.on_heartbeat(read_heartbeat(heartbeat)); };
  }
  GroupOutcome g = run_process_group(ranks);
  out.ranks = g.members;
  out.pgid = g.pgid;
  out.failed_rank = g.failed_member;
  out.process = g.members[static_cast<std::size_t>(std::max(0, g.failed_member))];
  ResultParse parsed;
  if (out.process.started && !out.process.deadline_hit && !out.process.interrupted &&
      !out.process.signaled) {
    parsed = parse_trial_result(req, out.result_path, out.process.wall_s);
  }
  decode_trial(out, parsed);
  if (!out.failure) out.result = std::move(parsed.result);
  return out;
}

}  // namespace sg::agent
