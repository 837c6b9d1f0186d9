// Reference [video; action] concat/split, AdaLN modulation / gated residual chains and the
// linear layers' bias add.
#include "kernels/rope/rope.hpp"

namespace sg::kernels {

at::Tensor joint_cat_reference(const at::Tensor& video, const at::Tensor& action) {
  return at::cat({video, action}, /*dim=*/1);
}

std::pair<at::Tensor, at::Tensor> joint_split_reference(const at::Tensor& joint, int64_t video_len) {
  const int64_t action_len = joint.size(1) - video_len;
  return {joint.narrow(1, 0, video_len), joint.narrow(1, video_len, action_len)};
}

at::Tensor adaln_modulate_reference(const at::Tensor& x, const at::Tensor& shift,
                                    const at::Tensor& scale, double eps) {
  auto normed = at::layer_norm(x, {x.size(-1)}, /*weight=*/{}, /*bias=*/{}, eps);
  return normed * (1 + scale) + shift;
}

at::Tensor gated_residual_reference(const at::Tensor& x, const at::Tensor& y, const at::Tensor& gate) {
  return x + y * gate;
}

at::Tensor bias_add_reference(const at::Tensor& y, const at::Tensor& bias) {
  at::Tensor out = y.is_leaf() && y.requires_grad() ? y.clone() : y;
  return out.add_(bias);
}

}  // namespace sg::kernels
