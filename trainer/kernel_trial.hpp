// `speedgate-train kernel-trial` (docs/protocol.md §5): times a kernel family's variants
// on the ops of one wam layer at a size's shapes and micro-batch, so the controller can
// rank variants by the kernels' own time (a kernel is a few percent of a training step,
// inside the noise of end-to-end trials). Writes one JSON result; exit 0 ok, 2 bad input,
// 3 out of memory, 1 crash.
#pragma once

#include <string>
#include <vector>

namespace sg::trainer {

int kernel_trial_command(const std::vector<std::string>& args);

}  // namespace sg::trainer
