// Flow-matching targets and loss (see flow_matching.hpp).
#include "trainer/workload/flow_matching.hpp"

#include "trainer/data/synthetic_clips.hpp"

#include <ATen/CPUGeneratorImpl.h>

namespace sg::trainer {

FlowTargets flow_targets(const at::Tensor& latents, const at::Tensor& actions, const std::vector<int64_t>& sample_ids,
                         uint64_t seed) {
  std::vector<at::Tensor> ts, eps, eps_a;
  auto host = at::TensorOptions().dtype(at::kFloat);
  auto lat_shape = latents.sizes().slice(1).vec();
  auto act_shape = actions.sizes().slice(1).vec();
  for (int64_t id : sample_ids) {
    auto gen = at::make_generator<at::CPUGeneratorImpl>(mix_seed(seed, static_cast<uint64_t>(id)));
    ts.push_back(at::sigmoid(at::randn({1}, gen, host)));
    eps.push_back(at::randn(lat_shape, gen, host));
    eps_a.push_back(at::randn(act_shape, gen, host));
  }
  const auto device = latents.device();
  FlowTargets f;
  f.t = at::cat(ts).to(device);
  auto noise = at::stack(eps).to(device);
  auto noise_a = at::stack(eps_a).to(device);
  auto x0 = latents.to(at::kFloat);
  auto a0 = actions.to(at::kFloat);
  auto tv = f.t.view({-1, 1, 1, 1, 1});
  auto ta = f.t.view({-1, 1, 1});
  f.x_t = (1 - tv) * x0 + tv * noise;
  f.v = noise - x0;
  f.a_t = (1 - ta) * a0 + ta * noise_a;
  f.v_a = noise_a - a0;
  return f;
}

at::Tensor flow_loss(const at::Tensor& pred_v, const at::Tensor& pred_a, const FlowTargets& f) {
  return at::mse_loss(pred_v.to(at::kFloat), f.v) + at::mse_loss(pred_a.to(at::kFloat), f.v_a);
}

}  // namespace sg::trainer
