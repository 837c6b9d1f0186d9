// Reference 3-D RoPE: float64 angle table and rotation (see rope.hpp).
#include "kernels/rope/rope.hpp"

#include <stdexcept>

namespace sg::kernels {
namespace {

// angles[p, j] = p * theta^(-2j/dim) for positions 0..n-1 and pairs j < dim/2, float64.
at::Tensor axis_angles(int64_t n, int64_t pairs, double theta) {
  auto opts = at::TensorOptions().dtype(at::kDouble);
  const int64_t dim = 2 * pairs;
  auto exponents = at::arange(0, dim, 2, opts).div(static_cast<double>(dim));
  auto inv_freq = at::pow(theta, exponents).reciprocal();
  auto pos = at::arange(n, opts);
  return at::outer(pos, inv_freq);  // [n, pairs]
}

}  // namespace

at::Tensor rope3d_table(int64_t frames, int64_t height, int64_t width, int64_t head_dim,
                        double theta, c10::Device device) {
  if (head_dim % 2 != 0 || head_dim < 6) {
    throw std::invalid_argument("rope3d_table: head_dim must be even and >= 6");
  }
  const int64_t c = head_dim / 2;
  const int64_t ch = c / 3;
  const int64_t cw = c / 3;
  const int64_t cf = c - ch - cw;
  auto af =
      axis_angles(frames, cf, theta).view({frames, 1, 1, cf}).expand({frames, height, width, cf});
  auto ah =
      axis_angles(height, ch, theta).view({1, height, 1, ch}).expand({frames, height, width, ch});
  auto aw =
      axis_angles(width, cw, theta).view({1, 1, width, cw}).expand({frames, height, width, cw});
  auto angles = at::cat({af, ah, aw}, /*dim=*/-1).reshape({frames * height * width, c});
  return at::stack({at::cos(angles), at::sin(angles)}, /*dim=*/-1).contiguous().to(device);
}

at::Tensor rope3d_apply_reference(const at::Tensor& x, const at::Tensor& table) {
  const auto sizes = x.sizes().vec();
  const int64_t b = sizes[0], s = sizes[1], h = sizes[2], d = sizes[3];
  auto xd = x.to(at::kDouble).reshape({b, s, h, d / 2, 2});
  auto x0 = xd.select(-1, 0);
  auto x1 = xd.select(-1, 1);
  auto cos = table.select(-1, 0).view({1, s, 1, d / 2});
  auto sin = table.select(-1, 1).view({1, s, 1, d / 2});
  auto o0 = x0 * cos - x1 * sin;
  auto o1 = x0 * sin + x1 * cos;
  return at::stack({o0, o1}, /*dim=*/-1).reshape(sizes).to(x.scalar_type());
}

}  // namespace sg::kernels
