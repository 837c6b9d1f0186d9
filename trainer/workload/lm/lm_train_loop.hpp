// The training loop of the lm workloads (lm, lm_osft), registered in lm_registration.cpp.
#pragma once

#include "trainer/train_loop.hpp"

namespace sg::trainer {

// run_training's contract (train_loop.hpp); `osft` trains the OSFT-factorised model
// (workload lm_osft). REQUIRES: one rank (the registry's data_parallel is false for lm).
void run_lm_training(const RunOptions& opt, const Switches& sw, const Runtime& rt,
                     RunResult& result, bool osft);

}  // namespace sg::trainer
