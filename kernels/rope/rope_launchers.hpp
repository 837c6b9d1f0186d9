// ROPE's host launchers (CUDA builds only); the contract shared by every family's
// launchers is kernels/common/cuda/launchers.hpp.
#pragma once

#include "kernels/common/cuda/launchers.hpp"

#include <ATen/ATen.h>

#include <cstdint>

namespace sg::kernels::cuda {

// rope3d_fused.cu: x / grad [B, S, H, D] contiguous, aligned to 2 elements,
// dtype float/bf16/half/double; table [S, D/2, 2] float64 contiguous, 16-byte aligned.
at::Tensor rope3d_forward(const at::Tensor& x, const at::Tensor& table, int64_t threads,
                          int64_t vec);
at::Tensor rope3d_backward(const at::Tensor& grad, const at::Tensor& table, int64_t threads,
                           int64_t vec);

}  // namespace sg::kernels::cuda
