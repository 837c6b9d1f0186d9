#include "trainer/runtime/perturb.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include "trainer/runtime/seed.hpp"

namespace sg::trainer {

void perturb_parameters(const std::vector<std::pair<std::string, at::Tensor>>& named, double eps,
                        uint64_t seed) {
  if (eps == 0) return;
  torch::NoGradGuard no_grad;
  at::Generator gen = at::detail::createCPUGenerator(mix_seed(seed, 0x5eed));
  for (const auto& [name, p] : named) {
    at::Tensor signs = torch::randint(0, 2, p.sizes(), gen, torch::dtype(torch::kFloat64)) * 2 - 1;
    at::Tensor factor = (signs * eps + 1).to(p.device(), p.scalar_type());
    p.mul_(factor);
  }
}

}  // namespace sg::trainer
