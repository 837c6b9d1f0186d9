#include "agent/runner/local_executor.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "agent/common/interrupt.hpp"

namespace sg::agent {

LocalExecutor::LocalExecutor(std::vector<std::string> gpu_ids, int parallel_trials)
    : gpu_ids_(std::move(gpu_ids)), parallel_trials_(std::max(1, parallel_trials)) {
  busy_.assign(gpu_ids_.empty() ? static_cast<std::size_t>(parallel_trials_) : gpu_ids_.size(),
               false);
}

int LocalExecutor::capacity(int world_size) const {
  if (gpu_ids_.empty()) return parallel_trials_;
  const int fit = static_cast<int>(gpu_ids_.size()) / std::max(1, world_size);
  return std::min(fit, parallel_trials_);
}

std::vector<int> LocalExecutor::acquire(int world_size, bool exclusive) {
  // CPU slots hold a whole trial whatever its rank count; GPU slots hold one rank.
  const int need = exclusive ? static_cast<int>(busy_.size()) : gpu_ids_.empty() ? 1 : world_size;
  std::unique_lock<std::mutex> lock(mu_);
  std::vector<int> got;
  cv_.wait(lock, [&] {
    if (running_ >= parallel_trials_) return false;
    got.clear();
    for (std::size_t i = 0; i < busy_.size() && static_cast<int>(got.size()) < need; ++i) {
      if (!busy_[i]) got.push_back(static_cast<int>(i));
    }
    return static_cast<int>(got.size()) == need;
  });
  for (int i : got) busy_[static_cast<std::size_t>(i)] = true;
  ++running_;
  return got;
}

void LocalExecutor::release(const std::vector<int>& slots) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int i : slots) busy_[static_cast<std::size_t>(i)] = false;
    --running_;
  }
  cv_.notify_all();
}

int LocalExecutor::master_port() {
  // Ports handed to trials that may still be starting are not handed out again.
  std::lock_guard<std::mutex> lock(mu_);
  for (int attempt = 0; attempt < 64; ++attempt) {
    int p = free_tcp_port();
    if (p > 0 && recent_ports_.insert(p).second) {
      if (recent_ports_.size() > 256) recent_ports_.erase(recent_ports_.begin());
      return p;
    }
  }
  return free_tcp_port();
}

TrialOutcome LocalExecutor::run(const TrialRequest& req) {
  const int world = std::max(1, req.world_size);
  throw_if_interrupted();
  const std::vector<int> slots = acquire(world, req.exclusive);
  if (interrupt_signal() != 0) {
    release(slots);
    throw_if_interrupted();
  }
  TrialRequest r = req;
  std::string label;
  if (!gpu_ids_.empty()) {
    // An exclusive trial holds every slot but its ranks use the first W.
    std::string devices;
    for (int i = 0; i < world && i < static_cast<int>(slots.size()); ++i) {
      const std::string& id =
          gpu_ids_[static_cast<std::size_t>(slots[static_cast<std::size_t>(i)])];
      devices += (devices.empty() ? "" : ",") + id;
    }
    r.launch_env.emplace_back("CUDA_VISIBLE_DEVICES", devices);
    label = "gpu " + devices;
  } else {
    label = fmt::format("cpu {}", slots.front());
  }
  if (world > 1) {
    r.launch_env.emplace_back("MASTER_ADDR", "127.0.0.1");
    r.launch_env.emplace_back("MASTER_PORT", std::to_string(master_port()));
  }
  TrialOutcome out;
  try {
    out = run_trial(r);
  } catch (...) {
    release(slots);
    throw;
  }
  release(slots);
  out.executor = "local";
  out.slots = label + (req.exclusive ? " (exclusive)" : "");
  return out;
}

}  // namespace sg::agent
