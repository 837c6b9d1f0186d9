// Flow-matching targets and loss (see flow_matching.hpp).
#include "trainer/workload/wam/flow_matching.hpp"

#include "trainer/test_mutants.hpp"
#include "trainer/workload/wam/data/synthetic_clips.hpp"

#include <ATen/CPUGeneratorImpl.h>

namespace sg::trainer {

namespace {

// The host draws, stacked, on the device.
at::Tensor stacked_on(const std::vector<at::Tensor>& draws, c10::Device device, bool async_copies) {
  // at::stack refuses an empty list; so does the pinned path (it needs a draw's shape).
  if (!(async_copies && device.is_cuda()) || draws.empty()) return at::stack(draws).to(device);
  auto shape = draws.front().sizes().vec();
  shape.insert(shape.begin(), static_cast<int64_t>(draws.size()));
  auto pinned = at::empty(shape, draws.front().options().pinned_memory(true));
  at::stack_out(pinned, draws);
  return pinned.to(device, /*non_blocking=*/true);
}

}  // namespace

FlowTargets flow_targets(const at::Tensor& latents, const at::Tensor& actions,
                         const std::vector<int64_t>& sample_ids, uint64_t seed, bool async_copies) {
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
  f.t = stacked_on(ts, device, async_copies).view({-1});  // [B, 1] -> [B]
  auto noise = stacked_on(eps, device, async_copies);
  auto noise_a = stacked_on(eps_a, device, async_copies);
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
  if (test_mutants().changes_loss()) return test_mutants().flow_loss(pred_v, pred_a, f);
  return at::mse_loss(pred_v.to(at::kFloat), f.v) + at::mse_loss(pred_a.to(at::kFloat), f.v_a);
}

}  // namespace sg::trainer
