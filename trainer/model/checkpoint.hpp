// Activation checkpointing as a custom autograd function (LibTorch has no C++
// checkpoint API): the forward runs the body without recording a graph and keeps only
// its inputs; the backward reruns the body with grad enabled (under the autocast state
// of the forward) and differentiates it. The body must be deterministic (no RNG).
#pragma once

#include <torch/torch.h>

#include <functional>
#include <vector>

namespace sg::trainer {

using TensorList = std::vector<at::Tensor>;
using CheckpointBody = std::function<TensorList(const TensorList& inputs)>;

// LibTorch 2.x's autograd Function::apply records the device of every tensor argument and
// throws on an undefined one (an absent mask). A custom function over a tensor list takes
// `tensors` (the defined inputs, in order) and runs `body`, which puts the undefined ones
// back in their slots before calling the original body.
struct DefinedInputs {
  TensorList tensors;
  CheckpointBody body;
};
DefinedInputs defined_inputs(CheckpointBody body, const TensorList& inputs);

// Runs body(inputs) under checkpointing when grad mode is on, plainly otherwise.
// params: every tensor the body reads that needs a gradient but is not in inputs
// (the module parameters). Non-floating inputs (masks, tables) are passed through.
TensorList checkpointed(CheckpointBody body, const TensorList& inputs, const TensorList& params);

}  // namespace sg::trainer
