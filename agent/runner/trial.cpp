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

std::optional<Disposition> decode_outcome(const ProcessOutcome& p, const ResultParse& parsed,
                                          std::string* reason) {
  if (!p.started) {
    *reason = "trainer did not start: " + p.start_error;
    return Disposition::crash;
  }
  if (p.interrupted) {
    *reason = std::string(kInterruptedReason) +
              "the controller was told to stop; the trial re-runs on resume";
    return Disposition::killed;
  }
  if (p.deadline_hit) {
    *reason = "deadline exceeded; process group terminated";
    return Disposition::timeout;
  }
  if (p.signaled) {
    if (p.signal == SIGKILL) {
      *reason = "killed by SIGKILL with no deadline pending (OOM killer or operator)";
      return Disposition::killed;
    }
    *reason = fmt::format("terminated by signal {} ({})", p.signal, ::strsignal(p.signal));
    return Disposition::crash;
  }
  const std::string detail = parsed.result ? parsed.result->error : std::string();
  switch (p.exit_code) {
    case 0:
      if (!parsed.result) {
        *reason = parsed.error;
        return Disposition::invalid_result;
      }
      if (parsed.result->status != "ok") {
        *reason = "exit 0 but result status '" + parsed.result->status + "'";
        return Disposition::invalid_result;
      }
      if (std::string bad = non_finite_value(*parsed.result); !bad.empty()) {
        *reason = "status ok but " + bad;
        return Disposition::nan;
      }
      return std::nullopt;
    case 2:
      *reason = "trainer rejected the input (exit 2)" + (detail.empty() ? "" : ": " + detail);
      return Disposition::crash;
    case 3:
      *reason = "out of memory (exit 3)" + (detail.empty() ? "" : ": " + detail);
      return Disposition::oom;
    case 4:
      *reason = "non-finite loss or gradient norm (exit 4)" + (detail.empty() ? "" : ": " + detail);
      return Disposition::nan;
    default:
      *reason = fmt::format("exit code {}", p.exit_code) + (detail.empty() ? "" : ": " + detail);
      return Disposition::crash;
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
                                      const std::string& heartbeat_path) {
  if (req.kernel) {
    std::vector<std::string> args = {"kernel-trial",
                                     "--workload",
                                     req.workload,
                                     "--size",
                                     req.size,
                                     "--micro-batch",
                                     std::to_string(req.micro_batch),
                                     "--family",
                                     req.kernel->family,
                                     "--repeats",
                                     std::to_string(req.kernel->repeats),
                                     "--threads",
                                     std::to_string(req.threads),
                                     "--result",
                                     result_path,
                                     "--heartbeat",
                                     heartbeat_path};
    for (const auto& v : req.kernel->variants) {
      args.push_back("--variant");
      args.push_back(v);
    }
    return args;
  }
  std::vector<std::string> args = {"run",
                                   "--workload",
                                   req.workload,
                                   "--size",
                                   req.size,
                                   "--steps",
                                   std::to_string(req.steps),
                                   "--seed",
                                   std::to_string(req.seed),
                                   "--micro-batch",
                                   std::to_string(req.micro_batch),
                                   "--grad-accum",
                                   std::to_string(req.grad_accum),
                                   "--threads",
                                   std::to_string(req.threads),
                                   "--result",
                                   result_path,
                                   "--heartbeat",
                                   heartbeat_path};
  if (req.perturb > 0) {  // only trainers whose manifest lists capability "perturb" get it
    args.push_back("--perturb");
    args.push_back(fmt::format("{:.17g}", req.perturb));
  }
  return args;
}

std::string read_heartbeat(const std::string& path) {
  std::string beat = read_file(path, kHeartbeatLimits.max_bytes).value_or("");
  if (!json_limits_error(beat, kHeartbeatLimits).empty()) beat.clear();
  return beat;
}

ResultParse parse_trial_result(const TrialRequest& req, const std::string& path, double wall_s) {
  ResultParse p = req.kernel ? parse_kernel_trial_file_as_result(path) : parse_result_file(path);
  if (!p.result || p.result->status != "ok") return p;
  std::string mismatch;
  if (req.kernel) {
    KernelTrialParse k = parse_kernel_trial_text(p.result->raw.dump());
    mismatch = k.result ? kernel_result_mismatch(req, *k.result) : k.error;
  } else {
    mismatch = result_mismatch(req, *p.result, wall_s);
  }
  if (mismatch.empty()) return p;
  return ResultParse{std::nullopt, mismatch};
}

void decode_trial(TrialOutcome& out, const ResultParse& parsed) {
  out.failure = decode_outcome(out.process, parsed, &out.reason);
  if (out.failure && out.ranks.size() > 1) {
    out.reason = fmt::format("rank {} of {}: {}", std::max(0, out.failed_rank), out.ranks.size(),
                             out.reason);
  }
}

TrialOutcome run_trial(const TrialRequest& req) {
  namespace fs = std::filesystem;
  fs::create_directories(req.dir);
  TrialOutcome out;
  out.result_path = (fs::path(req.dir) / "result.json").string();
  out.stdout_log = (fs::path(req.dir) / "stdout.log").string();
  out.stderr_log = (fs::path(req.dir) / "stderr.log").string();
  const std::string heartbeat = (fs::path(req.dir) / "heartbeat.json").string();
  std::error_code ec;
  fs::remove(out.result_path, ec);
  fs::remove(heartbeat, ec);

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
