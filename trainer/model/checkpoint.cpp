// Custom autograd function behind checkpointed() (see checkpoint.hpp).
#include "trainer/model/checkpoint.hpp"

#include "trainer/runtime/autocast.hpp"

#include <memory>

namespace sg::trainer {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Carries the body into the backward through the context (saved_data holds IValues).
struct BodyHolder : torch::CustomClassHolder {
  CheckpointBody body;
  size_t num_inputs = 0;
  std::vector<bool> input_needs_grad;
  AutocastState autocast;
};

class CheckpointFunction : public torch::autograd::Function<CheckpointFunction> {
 public:
  // Tensors must arrive as at::TensorList: Function::apply counts only Tensor and
  // TensorList arguments as graph inputs (a std::vector would be taken as a constant).
  static variable_list forward(AutogradContext* ctx, c10::intrusive_ptr<BodyHolder> holder,
                               at::TensorList input_list, at::TensorList param_list) {
    const variable_list inputs = input_list.vec();
    const variable_list params = param_list.vec();
    holder->num_inputs = inputs.size();
    for (const auto& t : inputs)
      holder->input_needs_grad.push_back(t.defined() && t.requires_grad());
    holder->autocast = current_autocast_state();
    ctx->save_for_backward(inputs);
    ctx->saved_data["holder"] = c10::IValue::make_capsule(holder);
    ctx->saved_data["params"] = params;
    variable_list out;
    {
      torch::NoGradGuard no_grad;
      out = holder->body(inputs);
    }
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    auto holder =
        c10::static_intrusive_pointer_cast<BodyHolder>(ctx->saved_data["holder"].toCapsule());
    auto saved = ctx->get_saved_variables();
    variable_list inputs;
    for (size_t i = 0; i < saved.size(); ++i) {
      auto t = saved[i].defined() ? saved[i].detach() : saved[i];
      if (holder->input_needs_grad[i]) t.requires_grad_(true);
      inputs.push_back(t);
    }
    variable_list outputs;
    {
      torch::AutoGradMode grad_on(true);
      AutocastScope autocast(holder->autocast);
      outputs = holder->body(inputs);
    }
    // Differentiate w.r.t. the inputs that need grad and the parameters.
    variable_list targets;
    std::vector<size_t> input_slots;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (holder->input_needs_grad[i]) {
        targets.push_back(inputs[i]);
        input_slots.push_back(i);
      }
    }
    const auto params = holder_params(ctx);
    for (const auto& p : params) targets.push_back(p);
    variable_list outs, gouts;
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (outputs[i].defined() && outputs[i].requires_grad() && grad_outputs[i].defined()) {
        outs.push_back(outputs[i]);
        gouts.push_back(grad_outputs[i]);
      }
    }
    variable_list grads;
    if (!outs.empty() && !targets.empty()) {
      grads = torch::autograd::grad(outs, targets, gouts, /*retain_graph=*/false,
                                    /*create_graph=*/false,
                                    /*allow_unused=*/true);
    } else {
      grads.resize(targets.size());
    }
    // One gradient per forward argument: the holder, every input, every parameter.
    variable_list result(1 + inputs.size() + params.size());
    for (size_t j = 0; j < input_slots.size(); ++j) result[1 + input_slots[j]] = grads[j];
    for (size_t j = 0; j < params.size(); ++j)
      result[1 + inputs.size() + j] = grads[input_slots.size() + j];
    return result;
  }

 private:
  static variable_list holder_params(AutogradContext* ctx) {
    return ctx->saved_data["params"].toTensorList().vec();
  }
};

}  // namespace

DefinedInputs defined_inputs(CheckpointBody body, const TensorList& inputs) {
  std::vector<size_t> defined_at;
  DefinedInputs d;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].defined()) {
      defined_at.push_back(i);
      d.tensors.push_back(inputs[i]);
    }
  }
  d.body = [body = std::move(body), defined_at, n = inputs.size()](const TensorList& given) {
    TensorList full(n);
    for (size_t j = 0; j < defined_at.size(); ++j) full[defined_at[j]] = given[j];
    return body(full);
  };
  return d;
}

TensorList checkpointed(CheckpointBody body, const TensorList& inputs, const TensorList& params) {
  if (!torch::GradMode::is_enabled()) return body(inputs);
  DefinedInputs d = defined_inputs(std::move(body), inputs);
  auto holder = c10::make_intrusive<BodyHolder>();
  holder->body = std::move(d.body);
  return CheckpointFunction::apply(holder, at::TensorList(d.tensors), at::TensorList(params));
}

}  // namespace sg::trainer
