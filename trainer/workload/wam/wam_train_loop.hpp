// The wam training loop (wam_train_loop.cpp), registered as workload "wam".
#pragma once

#include "trainer/train_loop.hpp"

namespace sg::trainer {

// run_training's contract (train_loop.hpp) for opt.workload == "wam".
void run_wam_training(const RunOptions& opt, const Switches& sw, const Runtime& rt,
                      RunResult& result);

}  // namespace sg::trainer
