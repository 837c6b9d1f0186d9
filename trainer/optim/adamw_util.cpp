// Optimizer helpers (see adamw_util.hpp).
#include "trainer/optim/adamw_util.hpp"

#include "trainer/result/digest.hpp"

#include <torch/version.h>

namespace sg::trainer {

const torch::optim::AdamWParamState* adam_state(const torch::optim::AdamW& optim,
                                                const at::Tensor& p) {
#if TORCH_VERSION_MAJOR >= 2
  auto it = optim.state().find(p.unsafeGetTensorImpl());
#else
  auto it = optim.state().find(c10::guts::to_string(p.unsafeGetTensorImpl()));
#endif
  if (it == optim.state().end()) return nullptr;
  return static_cast<const torch::optim::AdamWParamState*>(it->second.get());
}

at::Tensor clip_grad_norm(const std::vector<at::Tensor>& params, double max_norm) {
  std::vector<at::Tensor> norms;
  for (const auto& p : params) {
    if (p.grad().defined()) norms.push_back(p.grad().to(at::kFloat).norm(2));
  }
  auto total = at::stack(norms).norm(2);
  auto coef = at::clamp_max(max_norm / (total + 1e-6), 1.0);
  for (const auto& p : params) {
    if (p.grad().defined()) p.grad().mul_(coef.to(p.grad().scalar_type()));
  }
  return total;
}

std::string optimizer_digest(const torch::optim::AdamW& optim,
                             const std::vector<std::pair<std::string, at::Tensor>>& named,
                             int64_t* bytes) {
  Digest d;
  *bytes = 0;
  for (const auto& [name, p] : named) {
    const auto* s = adam_state(optim, p);
    if (s == nullptr) {
      d.add_string(name + ":no_state");
      continue;
    }
    d.add_int(s->step());
    d.add_tensor(name + ".exp_avg", s->exp_avg());
    d.add_tensor(name + ".exp_avg_sq", s->exp_avg_sq());
    *bytes += 2 * s->exp_avg().numel() * static_cast<int64_t>(s->exp_avg().element_size());
  }
  return d.hex();
}

}  // namespace sg::trainer
