// A RoPE test problem for the host-side fused-math tests: b sequences over an f x h x w
// token grid, `heads` heads of head_dim channels, x of dtype.
#pragma once

#include "kernels/rope/rope.hpp"

#include <ATen/ATen.h>

#include <cstdint>

namespace sg::kernels {

struct RopeGridCase {
  int64_t b, f, h, w, heads, head_dim;
  at::ScalarType dtype;

  int64_t tokens() const { return f * h * w; }
  // rope3d_table of the grid (theta 10000, CPU).
  at::Tensor table() const { return rope3d_table(f, h, w, head_dim, 10000.0, at::kCPU); }
};

}  // namespace sg::kernels
