#include "agent/runner/executor.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include <fmt/format.h>

#include "agent/common/errors.hpp"
#include "agent/common/files.hpp"
#include "agent/runner/local_executor.hpp"
#include "agent/runner/process.hpp"
#include "agent/runner/slurm_executor.hpp"

namespace sg::agent {

void ExecutorOptions::validate() const {
  auto need = [](bool ok, const std::string& msg) {
    if (!ok) throw UsageError(msg);
  };
  need(kind == "local" || kind == "slurm", "--executor must be local or slurm, not '" + kind + "'");
  need(gpus >= -1, "--gpus must be >= 0");
  need(parallel_trials >= 0, "--parallel-trials must be >= 1");
  need(slurm_gpus_per_rank >= 0, "--slurm-gpus-per-rank must be >= 0");
  need(slurm_poll_s > 0, "the Slurm poll interval must be > 0");
  need(kind == "slurm" || (slurm_partition.empty() && shared_dir.empty()),
       "--slurm-partition and --shared-dir need --executor slurm");
}

namespace {

// The GPU slots: CUDA_VISIBLE_DEVICES of the controller when set (its entries, so a
// controller confined to some GPUs hands out only those), else 0..n-1.
std::vector<std::string> gpu_slot_ids(int gpus) {
  std::vector<std::string> visible;
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES"); v && *v) {
    std::stringstream ss(v);
    for (std::string id; std::getline(ss, id, ',');) {
      if (!id.empty()) visible.push_back(id);
    }
  }
  std::vector<std::string> ids;
  for (int i = 0; i < gpus; ++i) {
    ids.push_back(i < static_cast<int>(visible.size()) ? visible[static_cast<std::size_t>(i)]
                                                       : std::to_string(i));
  }
  return ids;
}

}  // namespace

int detect_gpus() {
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES"); v && *v) {
    int n = 0;
    std::stringstream ss(v);
    for (std::string id; std::getline(ss, id, ',');) n += id.empty() ? 0 : 1;
    return n;
  }
  std::string exe;
  for (const char* dir : {"/usr/bin", "/usr/local/bin", "/usr/local/nvidia/bin"}) {
    if (::access((std::string(dir) + "/nvidia-smi").c_str(), X_OK) == 0)
      exe = std::string(dir) + "/nvidia-smi";
  }
  if (exe.empty()) return 0;
  namespace fs = std::filesystem;
  const fs::path tmp =
      fs::temp_directory_path() / ("speedgate-nvsmi-" + std::to_string(::getpid()));
  ProcessSpec spec;
  spec.exe = exe;
  spec.args = {"-L"};
  spec.env = inherited_env_without_switches();
  spec.stdout_log = tmp.string() + ".out";
  spec.stderr_log = tmp.string() + ".err";
  spec.deadline = std::chrono::seconds(30);
  ProcessOutcome p = run_process(spec);
  std::string out = read_file(spec.stdout_log, 1 << 20).value_or("");
  std::error_code ec;
  fs::remove(spec.stdout_log, ec);
  fs::remove(spec.stderr_log, ec);
  if (!p.started || p.signaled || p.exit_code != 0) return 0;
  int n = 0;
  std::stringstream ss(out);
  for (std::string line; std::getline(ss, line);) n += line.rfind("GPU ", 0) == 0 ? 1 : 0;
  return n;
}

int free_tcp_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

std::unique_ptr<Executor> make_executor(const ExecutorOptions& o, int trial_world_size) {
  o.validate();
  if (o.kind == "slurm") return std::make_unique<SlurmExecutor>(o);
  const int gpus = o.gpus >= 0 ? o.gpus : detect_gpus();
  if (gpus == 0)
    return std::make_unique<LocalExecutor>(std::vector<std::string>{},
                                           o.parallel_trials > 0 ? o.parallel_trials : 1);
  if (gpus < trial_world_size) {
    throw UsageError(
        fmt::format("--trial-world-size {} needs {} GPU slots; this host has {} (--gpus)",
                    trial_world_size, trial_world_size, gpus));
  }
  // With GPUs the slots bound the parallelism; --parallel-trials only lowers it.
  return std::make_unique<LocalExecutor>(gpu_slot_ids(gpus),
                                         o.parallel_trials > 0 ? o.parallel_trials : gpus);
}

}  // namespace sg::agent
