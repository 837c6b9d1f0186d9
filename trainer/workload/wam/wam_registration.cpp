// wam in the workload registry: its sizes from the size table (wam_config.hpp), the
// switches it reads and its training loop (wam_train_loop.cpp).
#include "trainer/workload/wam/wam_registration.hpp"

#include "trainer/workload/wam/wam_config.hpp"
#include "trainer/workload/wam/wam_train_loop.hpp"

namespace sg::trainer {
namespace {

std::vector<WorkloadSize> wam_sizes() {
  std::vector<WorkloadSize> out;
  for (const auto& name : wam_size_names()) {
    const auto& c = wam_config(name);
    WorkloadSize s;
    s.name = name;
    s.trainable_params = trainable_params(c);
    s.frozen_params = text_encoder_params(c) + vae_params(c);
    s.model_flops_per_sample = model_flops_per_sample(c);
    s.tokens_per_sample = c.tokens_per_sample();
    s.default_micro_batch = c.default_micro_batch;
    out.push_back(s);
  }
  return out;
}

}  // namespace

Workload wam_registration() {
  Workload w;
  w.name = "wam";
  w.sizes = wam_sizes;
  w.check_size = [](const std::string& size) { (void)wam_config(size); };
  w.reads = {SwitchScope::kRuntime, SwitchScope::kLayers, SwitchScope::kWam};
  w.data_parallel = true;
  w.kernel_trial = true;
  w.run = run_wam_training;
  return w;
}

}  // namespace sg::trainer
