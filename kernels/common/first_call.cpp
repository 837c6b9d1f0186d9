// The first-call check: a fused op's first call in a process runs fused and plain on the
// call's own inputs, forward and backward, and compares them bit for bit (first_call.hpp).
#include "kernels/common/first_call.hpp"

#include <c10/core/InferenceMode.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <iostream>
#include <stdexcept>

namespace sg::kernels {
namespace {

struct Trial {
  std::vector<at::Tensor> outputs;
  std::vector<at::Tensor> grads;  // of the differentiable inputs, in order
};

// Runs fn on fresh leaves aliasing the inputs (differentiable ones require grad), then
// backward with `seeds` (default: the outputs themselves) as the incoming grads. Uses no
// random numbers: the training run's generator state is untouched.
Trial trial(const OpFn& fn, const std::vector<at::Tensor>& inputs,
            const std::vector<bool>& differentiable, const std::vector<at::Tensor>* seeds) {
  at::AutoGradMode grad_on(true);
  std::vector<at::Tensor> ins, leaves;
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto t = inputs[i].detach();
    if (differentiable[i]) {
      t.requires_grad_(true);
      leaves.push_back(t);
    }
    ins.push_back(t);
  }
  Trial r;
  r.outputs = fn(ins);
  std::vector<at::Tensor> seed;
  if (seeds != nullptr) {
    seed = *seeds;
  } else {
    for (const auto& o : r.outputs) seed.push_back(o.detach().clone());
  }
  r.grads =
      torch::autograd::grad(r.outputs, leaves, seed, /*retain_graph=*/false, /*create_graph=*/false,
                            /*allow_unused=*/true);
  for (auto& o : r.outputs) o = o.detach();
  return r;
}

bool same_tensors(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].defined() != b[i].defined()) return false;
    if (a[i].defined() && !bitwise_equal(a[i], b[i])) return false;
  }
  return true;
}

}  // namespace

bool same_forward_backward(const OpFn& fused, const OpFn& plain,
                           const std::vector<at::Tensor>& inputs,
                           const std::vector<bool>& differentiable) {
  const Trial ref = trial(plain, inputs, differentiable, nullptr);
  std::vector<at::Tensor> seeds;
  for (const auto& o : ref.outputs) seeds.push_back(o.clone());
  const Trial got = trial(fused, inputs, differentiable, &seeds);
  return same_tensors(ref.outputs, got.outputs) && same_tensors(ref.grads, got.grads);
}

bool use_fused(FamilyState& fs, const Variant* fused, const Problem& problem, const char* family,
               const char* op, const std::function<bool()>& compare) {
  if (!fs.selected || fused == nullptr || fs.fell_back) return false;
  if (fused->can_implement(problem, fs.params) != Status::kSuccess) return false;
  std::lock_guard<std::mutex> lock(dispatch_mutex());
  if (fs.fell_back) return false;
  if (fs.passed.count(op) != 0) return true;
  // Inference tensors cannot require grad: run plain until a call that can be checked.
  if (c10::InferenceMode::is_enabled()) return false;
  bool same = false;
  std::string why = "outputs or grads differ";
  try {
    same = compare() && !fs.inject_mismatch;
    if (fs.inject_mismatch) why = "mismatch injected by a test";
  } catch (const std::exception& e) {
    why = std::string("the comparison failed: ") + e.what();
  }
  fs.inject_mismatch = false;
  if (!same) {
    fs.fell_back = true;
    std::cerr << "speedgate: kernel family " << family << " (" << op
              << "): the fused variant differs from "
              << "plain_aten on its first call (" << why
              << "); using plain_aten for the rest of this process\n";
    return false;
  }
  fs.passed.insert(op);
  return true;
}

}  // namespace sg::kernels
