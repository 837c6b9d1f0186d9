#include "agent/runner/describe.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "agent/common/errors.hpp"
#include "agent/common/files.hpp"
#include "agent/common/interrupt.hpp"
#include "agent/common/json_limits.hpp"
#include "agent/runner/process.hpp"

namespace sg::agent {

double describe_timeout_s() {
  const char* v = std::getenv(kDescribeTimeoutVariable);
  if (!v || !*v) return kDescribeTimeoutS;
  char* end = nullptr;
  const double s = std::strtod(v, &end);
  if (*end != '\0' || !std::isfinite(s) || s <= 0 || s > 86400) {
    throw UsageError(fmt::format("{}='{}' must be a number of seconds in (0, 86400]",
                                 kDescribeTimeoutVariable, v));
  }
  return s;
}

Manifest describe_trainer(const std::string& trainer) {
  namespace fs = std::filesystem;
  if (::access(trainer.c_str(), X_OK) != 0) {
    throw UsageError("trainer '" + trainer +
                     "' does not exist or is not executable (use --trainer PATH)");
  }
  fs::path dir = fs::temp_directory_path() / fmt::format("speedgate-describe-{}", ::getpid());
  fs::create_directories(dir);
  ProcessSpec spec;
  spec.exe = trainer;
  spec.args = {"describe", "--json"};
  spec.env = inherited_env_without_switches();
  spec.stdout_log = (dir / "stdout").string();
  spec.stderr_log = (dir / "stderr").string();
  const double limit_s = describe_timeout_s();
  spec.deadline = std::chrono::milliseconds(static_cast<long long>(limit_s * 1000));
  spec.grace = std::chrono::seconds(2);
  ProcessOutcome p = run_process(spec);
  std::error_code size_ec;
  const std::uintmax_t out_bytes = fs::file_size(spec.stdout_log, size_ec);
  std::string out = read_file(spec.stdout_log, kManifestLimits.max_bytes).value_or("");
  std::string err = read_file(spec.stderr_log, 1 << 16).value_or("");
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (p.interrupted) throw Interrupted(interrupt_signal());
  if (!p.started) throw UsageError("cannot run trainer '" + trainer + "': " + p.start_error);
  if (p.deadline_hit) {
    throw UsageError(
        fmt::format("'{} describe --json' did not finish within {} s ({}); it was killed", trainer,
                    limit_s, kDescribeTimeoutVariable));
  }
  if (p.signaled || p.exit_code != 0) {
    throw UsageError(fmt::format(
        "'{} describe --json' failed ({}): {}", trainer,
        p.signaled ? fmt::format("signal {}", p.signal) : fmt::format("exit {}", p.exit_code),
        err.substr(0, 2000)));
  }
  if (!size_ec && out_bytes > kManifestLimits.max_bytes) {
    throw UsageError(
        fmt::format("'{} describe --json': the manifest is larger than {} bytes ({} bytes)",
                    trainer, kManifestLimits.max_bytes, out_bytes));
  }
  if (Problem e = json_limits_problem(out, kManifestLimits)) {
    throw UsageError(fmt::format("'{} describe --json': the manifest {}", trainer, *e));
  }
  try {
    return parse_manifest_text(out);
  } catch (const UsageError& e) {
    throw UsageError(std::string(e.what()) + " (from " + trainer + ")");
  }
}

}  // namespace sg::agent
