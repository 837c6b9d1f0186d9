// A result is believed only when it is the run that was launched: every field the
// controller asked for comes back unchanged and the numbers are finite and plausible
// (docs/reliability.md, "A result that lies"). Pure functions; trial.cpp applies them
// to every result, whatever the executor.
#pragma once
#include <string>

#include "agent/common/problem.hpp"
#include "agent/protocol/kernel_trial_result.hpp"
#include "agent/protocol/result.hpp"
#include "agent/runner/trial.hpp"

namespace sg::agent {

// nullopt when the ok result `r` matches `req`; else the first mismatch, naming the field:
// "result field seed is 1, the trial launched seed 0". `wall_s` > 0 (the measured run
// time of the deciding process) also bounds the throughput and the step times.
Problem result_mismatch(const TrialRequest& req, const TrialResult& r, double wall_s);

// The same for a kernel trial's ok result (family, workload, size, micro-batch, repeats,
// the variants asked for).
Problem kernel_result_mismatch(const TrialRequest& req, const KernelTrialResult& r);

// nullopt when every loss, gradient norm and the eval loss of `r` is finite (from the bits);
// else which one is not: an ok status never carries a non-finite value.
Problem non_finite_value(const TrialResult& r);

}  // namespace sg::agent
