// What every training loop reads and fills, so the loops share it instead of each spelling
// it out: a loop keeps its built objects in a struct derived from RunContext.
#pragma once

#include "trainer/result/run_result.hpp"
#include "trainer/runtime/runtime.hpp"
#include "trainer/switches/switches.hpp"
#include "trainer/test_faults.hpp"
#include "trainer/train_loop.hpp"

#include <cstdint>

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

}  // namespace sg::trainer
