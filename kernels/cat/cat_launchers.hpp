// CAT's host launchers (CUDA builds only); the contract shared by every family's
// launchers is kernels/common/cuda/launchers.hpp.
#pragma once

#include "kernels/common/cuda/launchers.hpp"

#include <ATen/ATen.h>

#include <cstdint>
#include <utility>

namespace sg::kernels::cuda {

// joint_cat_fused.cu: video [B, Sv, C], action [B, Sa, C], joint [B, Sv+Sa, C],
// all contiguous and of one dtype. plus_zero: each element is v + 0 in its op math type
// (the engine's sum of two zero-filled slice grads); otherwise a raw row copy. flat: one
// grid-stride loop over all units instead of rows_per_block rows per block.
at::Tensor joint_cat(const at::Tensor& video, const at::Tensor& action, int64_t threads,
                     int64_t rows_per_block, bool flat, bool plus_zero);
std::pair<at::Tensor, at::Tensor> joint_split(const at::Tensor& joint, int64_t video_len,
                                              int64_t threads, int64_t rows_per_block, bool flat);

}  // namespace sg::kernels::cuda
