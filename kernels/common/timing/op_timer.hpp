// Times one op case (op_cases.hpp) for a variant: forward alone and forward + autograd
// backward, median of `repeats` after `warmup` runs with the input sets rotated. CUDA
// events on a CUDA device, with the GPU kept busy while the host dispatches the op (the
// GPU's time for the op's kernels, not the host's launch latency); the steady clock (after
// the op returns) on the CPU.
#pragma once

#include "kernels/common/timing/op_cases.hpp"

#include <string>
#include <vector>

namespace sg::kernels {

struct TimerOptions {
  int warmup = 5;
  int repeats = 31;  // odd: the median is one measurement
};

struct OpTiming {
  double fwd_ms = 0, fwdbwd_ms = 0;
};

// params null: the plain variant. REQUIRES: params (when given) pass check_params.
OpTiming time_op(const OpCase& op, const ParamValues* params, const TimerOptions& options);

// "threads=128,vec=2" (sorted by name); "" for no parameters.
std::string params_text(const ParamValues& params);

// Device-to-device copy rate in bytes/s (read + write counted) over 1 GiB buffers.
// REQUIRES: a CUDA build and device.
double device_copy_rate(const TimerOptions& options);

}  // namespace sg::kernels
