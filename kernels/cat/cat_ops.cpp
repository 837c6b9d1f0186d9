// CAT's ops as the model calls them, through the dispatch and its first-call check.
#include "kernels/cat/cat.hpp"
#include "kernels/common/first_call.hpp"

namespace sg::kernels {
namespace {

FamilyState& cat_state() {
  static FamilyState& fs = family_state("CAT");
  return fs;
}

}  // namespace

at::Tensor joint_cat(const at::Tensor& video, const at::Tensor& action) {
  auto& fs = cat_state();
  const auto* fused = fused_variant(fs, fused_cat());
  auto compare = [&] {
    return same_forward_backward(
        [&](const std::vector<at::Tensor>& in) {
          return std::vector<at::Tensor>{fused->run({in[0], in[1]}, fs.params)};
        },
        [&](const std::vector<at::Tensor>& in) {
          return std::vector<at::Tensor>{plain_cat().run({in[0], in[1]}, kNoParams)};
        },
        {video, action}, {true, true});
  };
  if (use_fused(fs, fused, cat_problem({video, action}), "CAT", "cat", compare)) {
    return fused->run({video, action}, fs.params);
  }
  return plain_cat().run({video, action}, kNoParams);
}

std::pair<at::Tensor, at::Tensor> joint_split(const at::Tensor& joint, int64_t video_len) {
  auto& fs = cat_state();
  const auto* fused = fused_variant(fs, fused_cat());
  auto as_list = [](std::pair<at::Tensor, at::Tensor> p) {
    return std::vector<at::Tensor>{p.first, p.second};
  };
  auto compare = [&] {
    return same_forward_backward(
        [&](const std::vector<at::Tensor>& in) {
          return as_list(fused->split(in[0], video_len, fs.params));
        },
        [&](const std::vector<at::Tensor>& in) {
          return as_list(plain_cat().split(in[0], video_len, kNoParams));
        },
        {joint}, {true});
  };
  if (use_fused(fs, fused, split_problem(joint, video_len), "CAT", "split", compare)) {
    return fused->split(joint, video_len, fs.params);
  }
  return plain_cat().split(joint, video_len, kNoParams);
}

}  // namespace sg::kernels
