// Step statistics read back to the host (see step_stats.hpp).
#include "trainer/runtime/step_stats.hpp"

#if SPEEDGATE_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#endif

namespace sg::trainer {

struct StepStats::Pending {
  int64_t step = 0;
  at::Tensor host;  // [loss_sum, grad_norm], float, written by the queued copy
#if SPEEDGATE_WITH_CUDA
  std::unique_ptr<at::cuda::CUDAEvent> copied;  // null off CUDA: the values are there already
#endif
  StepValues wait() {
#if SPEEDGATE_WITH_CUDA
    if (copied) copied->synchronize();
#endif
    const float* v = host.data_ptr<float>();
    return {step, v[0], v[1]};
  }
};

StepStats::StepStats(c10::Device device, bool lagged) : device_(device), lagged_(lagged) {}
StepStats::~StepStats() = default;

void StepStats::begin_step(int64_t step) {
  step_ = step;
  // The sum starts at float zero wherever it is kept: 0 + x, then in micro-batch order.
  loss_sum_ = at::zeros(
      {}, at::TensorOptions().dtype(at::kFloat).device(lagged_ ? device_ : c10::Device(c10::kCPU)));
  grad_norm_ = at::Tensor();
}

void StepStats::add_loss(const at::Tensor& loss) {
  loss_sum_ = loss_sum_ + (lagged_ ? loss.detach() : loss.detach().to(at::kCPU));
}

void StepStats::set_grad_norm(const at::Tensor& norm) {
  grad_norm_ = lagged_ ? norm.detach() : norm.detach().to(at::kCPU);
}

std::vector<StepValues> StepStats::ready() {
  std::vector<StepValues> out;
  if (!lagged_) {
    if (grad_norm_.defined()) {
      out.push_back({step_, loss_sum_.item<float>(), grad_norm_.to(at::kFloat).item<float>()});
      grad_norm_ = at::Tensor();  // returned once
    }
    return out;
  }
  return flush();
}

void StepStats::end_step() {
  if (!lagged_) return;
  auto p = std::make_unique<Pending>();
  p->step = step_;
  const auto values = at::stack({loss_sum_, grad_norm_.to(at::kFloat)});
  if (values.is_cuda()) {
#if SPEEDGATE_WITH_CUDA
    p->host = at::empty({2}, at::TensorOptions().dtype(at::kFloat).pinned_memory(true));
    p->host.copy_(values, /*non_blocking=*/true);
    p->copied = std::make_unique<at::cuda::CUDAEvent>();
    p->copied->record(at::cuda::getCurrentCUDAStream(values.get_device()));  // after the copy
#endif
  } else {
    p->host = values.clone();
  }
  pending_.push_back(std::move(p));
}

std::vector<StepValues> StepStats::flush() {
  std::vector<StepValues> out;
  for (auto& p : pending_) out.push_back(p->wait());
  pending_.clear();
  return out;
}

}  // namespace sg::trainer
