// `speedgate-train kernel-trial` (docs/protocol.md §5): times a kernel family's variants
// on the ops of one wam layer at a size's shapes and micro-batch, so the controller can
// rank variants by the kernels' own time (a kernel is a few percent of a training step,
// inside the noise of end-to-end trials). Writes one JSON result; exit 0 ok, 2 bad input,
// 3 out of memory, 1 crash.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "kernels/common/timing/op_timer.hpp"

namespace sg::trainer {

struct KernelTrialOptions {
  std::string workload = "wam", size, family, result_path, heartbeat_path;
  int64_t micro_batch = 0;  // 0: the size's default
  std::vector<std::string>
      variants;  // "plain" or a parameter string; empty: plain + every legal one
  sg::kernels::TimerOptions timer;
  int threads = 2;
};

// `kernel-trial`'s flags, bound to `o` (its initial values are the defaults --help shows).
void add_kernel_trial_options(CLI::App& app, KernelTrialOptions& o);

int kernel_trial_command(const KernelTrialOptions& options);

}  // namespace sg::trainer
