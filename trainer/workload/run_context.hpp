// What every training loop reads and fills, so the loops share it instead of each spelling
// it out: a loop keeps its built objects in a struct derived from RunContext.
#pragma once

#include "trainer/result/run_result.hpp"
#include "trainer/runtime/runtime.hpp"
#include "trainer/switches/switches.hpp"
#include "trainer/test_faults.hpp"
#include "trainer/train_loop.hpp"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace sg::trainer {

struct RunContext {
  const RunOptions& opt;
  const Switches& sw;
  const Runtime& rt;
  RunResult& r;
  const TestFaults& faults;
};

// The result's identity of the run: workload, size, seed, steps, micro-batch (`micro`, the
// resolved one), accumulation, world size, switches, fingerprint and memory device.
void start_result(const RunOptions& opt, const Switches& sw, const Runtime& rt, int64_t micro,
                  RunResult& r);

// The steady-state throughput of steps [warmup, opt.steps): r.steady_state_steps and
// r.samples_per_s (samples_per_step samples a step, over those steps' recorded seconds).
// Returns the seconds.
double record_steady_throughput(const RunOptions& opt, int64_t warmup, int64_t samples_per_step,
                                RunResult& r);

// The memory breakdown: bytes of `params` and of their gradients, the optimizer's and the
// frozen bytes given, and the rest of the allocated peak as activations (at least 0).
MemoryBreakdown memory_breakdown(const std::vector<at::Tensor>& params, int64_t optimizer,
                                 int64_t frozen, int64_t peak_allocated);

}  // namespace sg::trainer
