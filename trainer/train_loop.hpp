// One training run of speedgate-train: build, load data, step, evaluate, report.
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
  // > 0: before step 0 every trainable parameter element x becomes x*(1+perturb*s),
  // s = +-1 seeded by (seed, 0x5eed) (protocol `run --perturb`). In [0, 1).
  double perturb = 0;
};

// Fills `result` as it goes, so a caller catching an OOM or NonFiniteError still has the
// steps done so far. Throws BadInputError, NonFiniteError, or the allocator's error.
// Dispatches on opt.workload (wam here, lm / lm_osft to lm/lm_train_loop.cpp).
void run_training(const RunOptions& opt, const Switches& sw, const Runtime& rt, RunResult& result);

// Checks before any work that the workload and size exist and every switch set applies to
// the workload. Throws BadInputError naming the problem.
void validate_run_target(const RunOptions& opt, const Switches& sw);

}  // namespace sg::trainer
