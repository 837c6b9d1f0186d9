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

std::vector<WorkloadSize> lm_plain_sizes() { return lm_sizes(/*osft=*/false); }
std::vector<WorkloadSize> lm_osft_sizes() { return lm_sizes(/*osft=*/true); }

void run_lm(const RunOptions& opt, const Switches& sw, const Runtime& rt, RunResult& r) {
  run_lm_training(opt, sw, rt, r, /*osft=*/false);
}
void run_lm_osft(const RunOptions& opt, const Switches& sw, const Runtime& rt, RunResult& r) {
  run_lm_training(opt, sw, rt, r, /*osft=*/true);
}

Workload lm_like(const char* name, bool osft) {
  Workload w;
  w.name = name;
  w.sizes = osft ? lm_osft_sizes : lm_plain_sizes;
  w.check_size = [](const std::string& size) { (void)lm_config(size); };
  w.reads = {SwitchScope::kRuntime, SwitchScope::kLayers, SwitchScope::kLmPacking};
  w.run = osft ? run_lm_osft : run_lm;
  return w;  // one rank only, no kernel-trial shapes
}

}  // namespace

Workload lm_registration() { return lm_like("lm", /*osft=*/false); }

Workload lm_osft_registration() { return lm_like("lm_osft", /*osft=*/true); }

}  // namespace sg::trainer
