// Result JSON and atomic file writes (see run_result.hpp).
#include "trainer/result/run_result.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace sg::trainer {
namespace {

// JSON has no NaN/Inf: non-finite decimals are written as null (the bits are exact).
nlohmann::json number(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

}  // namespace

nlohmann::json to_json(const RunResult& r) {
  nlohmann::json j;
  j["protocol"] = 1;
  j["status"] = r.status;
  j["error"] = r.error;
  j["workload"] = r.workload;
  j["size"] = r.size;
  j["seed"] = r.seed;
  j["steps"] = r.steps;
  j["micro_batch"] = r.micro_batch;
  j["grad_accum"] = r.grad_accum;
  j["world_size"] = r.world_size;
  j["switches"] = r.switches;
  auto steps = nlohmann::json::array();
  for (const auto& s : r.step_records) {
    steps.push_back({{"step", s.step},
                     {"loss", number(s.loss)},
                     {"loss_bits", float_bits(s.loss)},
                     {"grad_norm", number(s.grad_norm)},
                     {"grad_norm_bits", float_bits(s.grad_norm)},
                     {"seconds", s.seconds}});
  }
  j["step_records"] = steps;
  j["param_digest"] = r.param_digest;
  j["optimizer_digest"] = r.optimizer_digest;
  j["rank_param_digests"] = r.rank_param_digests;
  j["zero_stage"] = r.zero_stage;
  j["eval_loss"] = r.has_eval ? number(r.eval_loss) : nlohmann::json(nullptr);
  j["eval_loss_bits"] = r.has_eval ? float_bits(r.eval_loss) : "";
  j["samples_per_s"] = r.samples_per_s;
  j["tokens_per_s"] = r.tokens_per_s;
  j["steady_state_steps"] = r.steady_state_steps;
  j["model_flops_per_step"] = r.model_flops_per_step;
  j["memory"] = sg::memory_json(r.memory_device, r.peak_allocated, r.peak_reserved, r.breakdown,
                                r.phase_peak_allocated);
  j["fingerprint"] = r.fingerprint;
  j["extra"] = r.extra;
  if (r.extra.contains("perturb")) j["perturb"] = r.extra["perturb"];  // protocol §2
  return j;
}

void write_file_atomically(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot write " + tmp + ": " + std::strerror(errno));
  // Every failure removes the temp: nothing half-written is left beside PATH.
  auto fail = [&](const std::string& what) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw std::runtime_error(what + ": " + why);
  };
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      fail("write failed on " + tmp);
    }
    done += static_cast<size_t>(n);
  }
  ::fsync(fd);
  if (::close(fd) != 0) fail("cannot close " + tmp);
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail("cannot rename " + tmp + " to " + path);
}

void write_heartbeat(const std::string& path, int64_t step) {
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  nlohmann::json j{{"pid", ::getpid()}, {"step", step}, {"time", now}};
  write_file_atomically(path, j.dump() + "\n");
}

}  // namespace sg::trainer
