// The training loop of the lm workloads (lm, lm_osft), reached from run_training's
// workload dispatch (train_loop.cpp).
#pragma once

#include "trainer/train_loop.hpp"

namespace sg::trainer {

// Same contract as run_training. REQUIRES: is_lm_workload(opt.workload).
void run_lm_training(const RunOptions& opt, const Switches& sw, const Runtime& rt, RunResult& result);

}  // namespace sg::trainer
