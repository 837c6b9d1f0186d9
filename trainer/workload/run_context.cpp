// start_result and the report helpers (see run_context.hpp).
#include "trainer/workload/run_context.hpp"

#include <algorithm>

namespace sg::trainer {

void start_result(const RunOptions& opt, const Switches& sw, const Runtime& rt, int64_t micro,
                  RunResult& r) {
  r.workload = opt.workload, r.size = opt.size, r.seed = opt.seed, r.steps = opt.steps;
  r.micro_batch = micro, r.grad_accum = opt.grad_accum, r.world_size = rt.world_size;
  r.switches = sw.resolved;
  r.fingerprint = fingerprint(rt);
  r.memory_device = rt.device.is_cuda() ? "cuda" : "cpu";
}

double record_steady_throughput(const RunOptions& opt, int64_t warmup, int64_t samples_per_step,
                                RunResult& r) {
  double seconds = 0.0;
  for (int64_t s = warmup; s < opt.steps; ++s)
    seconds += r.step_records[static_cast<size_t>(s)].seconds;
  r.steady_state_steps = opt.steps - warmup;
  const double samples = static_cast<double>(samples_per_step * r.steady_state_steps);
  r.samples_per_s = seconds > 0 ? samples / seconds : 0.0;
  return seconds;
}

MemoryBreakdown memory_breakdown(const std::vector<at::Tensor>& params, int64_t optimizer,
                                 int64_t frozen, int64_t peak_allocated) {
  MemoryBreakdown b;
  for (const auto& p : params) {
    b.parameters += p.numel() * static_cast<int64_t>(p.element_size());
    if (p.grad().defined())
      b.gradients += p.grad().numel() * static_cast<int64_t>(p.grad().element_size());
  }
  b.optimizer = optimizer;
  b.frozen = frozen;
  b.activations =
      std::max<int64_t>(0, peak_allocated - b.parameters - b.gradients - b.optimizer - b.frozen);
  return b;
}

}  // namespace sg::trainer
