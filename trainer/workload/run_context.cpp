// start_result (see run_context.hpp).
#include "trainer/workload/run_context.hpp"

namespace sg::trainer {

void start_result(const RunOptions& opt, const Switches& sw, const Runtime& rt, int64_t micro,
                  RunResult& r) {
  r.workload = opt.workload, r.size = opt.size, r.seed = opt.seed, r.steps = opt.steps;
  r.micro_batch = micro, r.grad_accum = opt.grad_accum, r.world_size = rt.world_size;
  r.switches = sw.resolved;
  r.fingerprint = fingerprint(rt);
  r.memory_device = rt.device.is_cuda() ? "cuda" : "cpu";
}

}  // namespace sg::trainer
