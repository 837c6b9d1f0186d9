// lm and lm_osft in the workload registry: their sizes from the size table
// (lm_config.hpp), the switches they read and their training loop (lm_train_loop.cpp).
#include "trainer/workload/lm/lm_registration.hpp"

#include "trainer/workload/lm/lm_config.hpp"
#include "trainer/workload/lm/lm_train_loop.hpp"

namespace sg::trainer {
namespace {

std::vector<WorkloadSize> lm_sizes(bool osft) {
  std::vector<WorkloadSize> out;
  for (const auto& name : lm_size_names()) {
    const auto& c = lm_config(name);
    const double per_token = lm_model_flops_per_token(c);
    WorkloadSize s;
    s.name = name;
    s.trainable_params = lm_trainable_params(c, osft);
    s.frozen_params = lm_frozen_params(c, osft);
    s.model_flops_per_token = per_token;
    s.model_flops_per_sample = per_token * static_cast<double>(c.seq_len);
    s.tokens_per_sample = c.seq_len;
    s.default_micro_batch = c.default_micro_batch;
    out.push_back(s);
  }
  return out;
}

Workload lm_like(const char* name) {
  Workload w;
  w.name = name;
  w.check_size = [](const std::string& size) { (void)lm_config(size); };
  w.reads = {SwitchScope::kRuntime, SwitchScope::kLayers, SwitchScope::kLmPacking};
  return w;  // one rank only, no kernel-trial shapes
}

}  // namespace

Workload lm_registration() {
  Workload w = lm_like("lm");
  w.sizes = [] { return lm_sizes(/*osft=*/false); };
  w.run = [](const RunOptions& opt, const Switches& sw, const Runtime& rt, RunResult& r) {
    run_lm_training(opt, sw, rt, r, /*osft=*/false);
  };
  return w;
}

Workload lm_osft_registration() {
  Workload w = lm_like("lm_osft");
  w.sizes = [] { return lm_sizes(/*osft=*/true); };
  w.run = [](const RunOptions& opt, const Switches& sw, const Runtime& rt, RunResult& r) {
    run_lm_training(opt, sw, rt, r, /*osft=*/true);
  };
  return w;
}

}  // namespace sg::trainer
