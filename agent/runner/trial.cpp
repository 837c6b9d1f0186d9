#include "agent/runner/trial.hpp"

#include <signal.h>

#include <filesystem>

#include <fmt/format.h>

#include "agent/common/files.hpp"

namespace sg::agent {

std::optional<Disposition> decode_outcome(const ProcessOutcome& p, const ResultParse& parsed,
                                          std::string* reason) {
  if (!p.started) {
    *reason = "trainer did not start: " + p.start_error;
    return Disposition::crash;
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

  ProcessSpec spec;
  spec.exe = req.trainer;
  spec.args = {"run",
               "--workload", req.workload,
               "--size", req.size,
               "--steps", std::to_string(req.steps),
               "--seed", std::to_string(req.seed),
               "--micro-batch", std::to_string(req.micro_batch),
               "--grad-accum", std::to_string(req.grad_accum),
               "--threads", std::to_string(req.threads),
               "--result", out.result_path,
               "--heartbeat", heartbeat};
  spec.env = inherited_env_without_switches();
  for (const auto& kv : req.switch_env) spec.env.push_back(kv);
  spec.stdout_log = out.stdout_log;
  spec.stderr_log = out.stderr_log;
  spec.deadline = req.deadline;
  spec.grace = req.grace;
  if (req.on_heartbeat) {
    spec.on_tick = [&] { req.on_heartbeat(read_file(heartbeat, 1 << 16).value_or("")); };
  }
  out.process = run_process(spec);
  ResultParse parsed;
  if (out.process.started && !out.process.deadline_hit && !out.process.signaled) {
    parsed = parse_result_file(out.result_path);
  }
  out.failure = decode_outcome(out.process, parsed, &out.reason);
  if (!out.failure) out.result = std::move(parsed.result);
  return out;
}

}  // namespace sg::agent
