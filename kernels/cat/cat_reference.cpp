// Reference [video; action] concat and split.
#include "kernels/cat/cat.hpp"

namespace sg::kernels {

at::Tensor joint_cat_reference(const at::Tensor& video, const at::Tensor& action) {
  return at::cat({video, action}, /*dim=*/1);
}

std::pair<at::Tensor, at::Tensor> joint_split_reference(const at::Tensor& joint,
                                                        int64_t video_len) {
  const int64_t action_len = joint.size(1) - video_len;
  return {joint.narrow(1, 0, video_len), joint.narrow(1, video_len, action_len)};
}

}  // namespace sg::kernels
