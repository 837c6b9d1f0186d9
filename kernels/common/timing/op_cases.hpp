// The kernel families' ops as the wam model runs them, at a workload's shapes: the
// inputs (several rotating sets, so a timed loop does not run from L2) and a call that
// runs the op through the plain variant or the fused one with given parameters. Shared
// by speedgate-kernels-bench (the exhaustive sweep) and `speedgate-train kernel-trial`
// (the controller's kernel-level trials), so both time exactly the same thing.
#pragma once

#include "kernels/common/variant.hpp"

#include <ATen/ATen.h>

#include <functional>
#include <string>
#include <vector>

namespace sg::kernels {

// The shapes a family's ops see in one layer of the model.
struct KernelShape {
  int64_t batch = 8;
  int64_t video_tokens = 1280, action_tokens = 16;
  int64_t heads = 12, head_dim = 128;
  int64_t latent_frames = 5, grid_h = 16, grid_w = 16;  // the RoPE table's token grid
  c10::Device device{c10::kCUDA};
};

struct OpCase {
  std::string op;      // "rope fp32", "modulate bf16 autocast", ...
  std::string family;  // "ROPE"
  double bytes = 0;    // the forward's minimal traffic: inputs read once, outputs written once
  std::vector<std::vector<at::Tensor>> sets;  // rotating input sets
  // Forward of set `inputs`: the plain variant when params is null, else the fused one.
  std::function<std::vector<at::Tensor>(const std::vector<at::Tensor>& inputs,
                                        const ParamValues* params)>
      run;
};

// The ops of `family` (a registered family's name: "ROPE", "CAT", ...; each family's
// <family>_cases.cpp builds them) with `input_sets` random input sets each. On CUDA the dtypes and
// autocast are the model's under bf16 autocast; on the CPU (plain variants only) everything is
// float32, as the model runs there. Throws std::invalid_argument for an unknown family.
std::vector<OpCase> op_cases(const std::string& family, const KernelShape& shape, int input_sets);

}  // namespace sg::kernels
