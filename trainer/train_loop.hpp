// One training run of speedgate-train: its options, and the entry that runs the registered
// workload's training loop (trainer/workload/).
#pragma once

#include "trainer/result/run_result.hpp"
#include "trainer/runtime/runtime.hpp"
#include "trainer/switches/switches.hpp"

#include <cstdint>
#include <string>

namespace sg::trainer {

struct RunOptions {
  std::string workload = "wam";
  std::string size = "tiny";
  int64_t steps = 8;
  int64_t seed = 0;
  int64_t micro_batch = 0;  // 0: the size's default
  int64_t grad_accum = 1;
  std::string result_path;
  std::string preset_path;
  std::string heartbeat_path;
  int threads = 2;
  int64_t warmup_steps = 2;  // excluded from samples/s
  int64_t eval_batches = 2;
  double perturb = 0;  // --perturb EPS: initial parameters x(1 + EPS * +-1) (runtime/perturb.hpp)
};

// Fills `result` as it goes, so a caller catching an OOM or NonFiniteError still has the
// steps done so far. Throws BadInputError, NonFiniteError, or the allocator's error.
// Runs opt.workload's registered loop (Workload::run).
void run_training(const RunOptions& opt, const Switches& sw, const Runtime& rt, RunResult& result);

// Checks before any work that the workload and size exist and that the workload reads
// every switch set. Throws BadInputError naming the problem.
void validate_run_target(const RunOptions& opt, const Switches& sw);

}  // namespace sg::trainer
