// The local executor: trials run on this host. GPU hosts have one slot per GPU and a
// trial of W ranks takes W free slots (CUDA_VISIBLE_DEVICES lists them; rank r uses
// cuda:LOCAL_RANK), so one-GPU trials run side by side; CPU hosts have
// --parallel-trials slots (default 1: one trial at a time, as before executors). An
// exclusive trial (a speed measurement) waits for every slot and holds them all.
#pragma once
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "agent/runner/executor.hpp"

namespace sg::agent {

class LocalExecutor : public Executor {
 public:
  // `gpu_ids`: the device ids of the GPU slots (empty = a CPU host with `parallel_trials` slots).
  LocalExecutor(std::vector<std::string> gpu_ids, int parallel_trials);

  std::string name() const override { return "local"; }
  int capacity(int world_size) const override;
  TrialOutcome run(const TrialRequest& req) override;

 private:
  std::vector<int> acquire(int world_size, bool exclusive);
  void release(const std::vector<int>& slots);
  int master_port();

  std::vector<std::string> gpu_ids_;
  int parallel_trials_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<bool> busy_;
  int running_ = 0;
  std::set<int> recent_ports_;
};

}  // namespace sg::agent
