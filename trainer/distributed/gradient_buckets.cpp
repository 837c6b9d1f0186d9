// Bucketed gradient all-reduce (see gradient_buckets.hpp).
#include "trainer/distributed/gradient_buckets.hpp"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/torch.h>

#include <functional>
#include <mutex>

namespace sg::trainer {

BucketPlan plan_buckets(const std::vector<int64_t>& param_bytes, const std::vector<int>& dtypes,
                        int64_t bucket_bytes) {
  BucketPlan plan;
  int64_t filled = 0;
  for (size_t k = param_bytes.size(); k-- > 0;) {
    const bool close =
        !plan.buckets.empty() && !plan.buckets.back().empty() &&
        (filled + param_bytes[k] > bucket_bytes || dtypes[plan.buckets.back().back()] != dtypes[k]);
    if (plan.buckets.empty() || close) {
      plan.buckets.emplace_back();
      filled = 0;
    }
    plan.buckets.back().push_back(k);
    filled += param_bytes[k];
  }
  return plan;
}

struct GradientReducer::State {
  std::mutex mu;
  std::vector<at::Tensor> params;
  Communicator* comm = nullptr;
  bool overlap = false;
  BucketPlan plan;
  std::vector<size_t> bucket_of;              // per parameter
  std::vector<std::vector<int64_t>> offsets;  // per bucket, per member: element offset
  std::vector<at::Tensor> flat;               // per bucket
  std::vector<size_t> missing;                // per bucket: gradients not ready yet
  std::vector<Communicator::Wait> started;    // per bucket: empty until its all-reduce starts
  size_t next_to_start = 0;
  bool armed = false;
  int64_t started_in_backward = 0;

  void reset() {
    for (size_t b = 0; b < plan.buckets.size(); ++b) missing[b] = plan.buckets[b].size();
    started.assign(plan.buckets.size(), Communicator::Wait());
    next_to_start = 0;
    armed = false;
  }

  void start(size_t b) {
    torch::NoGradGuard no_grad;
    for (size_t m = 0; m < plan.buckets[b].size(); ++m) {
      const at::Tensor& p = params[plan.buckets[b][m]];
      at::Tensor slot = flat[b].narrow(0, offsets[b][m], p.numel());
      if (p.grad().defined()) {
        slot.copy_(p.grad().reshape(-1));
      } else {
        slot.zero_();
      }
    }
    started[b] = comm->all_reduce_sum_async(flat[b]);
  }

  // Starts every complete bucket at the front of the order.
  void start_ready_prefix() {
    while (next_to_start < plan.buckets.size() && missing[next_to_start] == 0)
      start(next_to_start++);
  }

  void on_gradient(size_t param) {
    std::lock_guard<std::mutex> lock(mu);
    if (!armed) return;
    const size_t b = bucket_of[param];
    if (missing[b] > 0) --missing[b];
    const size_t before = next_to_start;
    start_ready_prefix();
    started_in_backward += static_cast<int64_t>(next_to_start - before);
  }
};

namespace {

// Runs after a parameter's AccumulateGrad node, i.e. once its .grad holds this backward's
// complete gradient.
class GradientReadyHook : public torch::autograd::FunctionPostHook {
 public:
  explicit GradientReadyHook(std::function<void()> ready) : ready_(std::move(ready)) {}
  torch::autograd::variable_list operator()(
      const torch::autograd::variable_list& outputs,
      const torch::autograd::variable_list& /*inputs*/) override {
    ready_();
    return outputs;
  }

 private:
  std::function<void()> ready_;
};

}  // namespace

GradientReducer::GradientReducer(std::vector<at::Tensor> params, Communicator* comm,
                                 int64_t bucket_bytes, bool overlap) {
  if (comm == nullptr) return;
  state_ = std::make_shared<State>();
  auto& s = *state_;
  s.params = std::move(params);
  s.comm = comm;
  s.overlap = overlap;
  std::vector<int64_t> bytes;
  std::vector<int> dtypes;
  for (const auto& p : s.params) {
    bytes.push_back(p.numel() * static_cast<int64_t>(p.element_size()));
    dtypes.push_back(static_cast<int>(p.scalar_type()));
  }
  s.plan = plan_buckets(bytes, dtypes, bucket_bytes);
  s.bucket_of.resize(s.params.size());
  for (size_t b = 0; b < s.plan.buckets.size(); ++b) {
    int64_t numel = 0;
    s.offsets.emplace_back();
    for (size_t i : s.plan.buckets[b]) {
      s.bucket_of[i] = b;
      s.offsets[b].push_back(numel);
      numel += s.params[i].numel();
    }
    const auto& first = s.params[s.plan.buckets[b].front()];
    s.flat.push_back(at::empty({numel}, first.options().requires_grad(false)));
  }
  s.missing.resize(s.plan.buckets.size());
  s.reset();
  if (overlap) {
    for (size_t i = 0; i < s.params.size(); ++i) {
      auto acc = torch::autograd::impl::grad_accumulator(s.params[i]);
      std::weak_ptr<State> weak = state_;
      acc->add_post_hook(std::make_unique<GradientReadyHook>([weak, i] {
        if (auto st = weak.lock()) st->on_gradient(i);
      }));
      accumulators_.push_back(std::move(acc));
    }
  }
}

GradientReducer::~GradientReducer() = default;

void GradientReducer::begin_backward(bool last) {
  if (!state_) return;
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->armed = state_->overlap && last;
}

void GradientReducer::finish() {
  if (!state_) return;
  auto& s = *state_;
  std::lock_guard<std::mutex> lock(s.mu);
  torch::NoGradGuard no_grad;
  for (size_t b = 0; b < s.plan.buckets.size(); ++b) {
    if (!s.started[b]) s.start(b);
  }
  const double world = static_cast<double>(s.comm->world_size());
  for (size_t b = 0; b < s.plan.buckets.size(); ++b) {
    s.started[b]();
    s.flat[b].div_(world);
    for (size_t m = 0; m < s.plan.buckets[b].size(); ++m) {
      const at::Tensor& p = s.params[s.plan.buckets[b][m]];
      if (!p.grad().defined()) continue;
      p.grad().copy_(s.flat[b].narrow(0, s.offsets[b][m], p.numel()).view(p.grad().sizes()));
    }
  }
  s.reset();
}

int64_t GradientReducer::started_in_backward() const {
  return state_ ? state_->started_in_backward : 0;
}

const BucketPlan& GradientReducer::plan() const {
  static const BucketPlan kNone;
  return state_ ? state_->plan : kNone;
}

}  // namespace sg::trainer
