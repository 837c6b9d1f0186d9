// CAT's ops as the model calls them, through the dispatch and its first-call check.
#include "kernels/cat/cat.hpp"
#include "kernels/common/first_call.hpp"

namespace sg::kernels {
at::Tensor joint_cat(const at::Tensor& video, const at::Tensor& action) {
  static FamilyState& fs = family_state("CAT");
  auto call = [](const CatVariant& v, const std::vector<at::Tensor>& in, const ParamValues& p) {
    return v.run({in[0], in[1]}, p);
  };
  return dispatch_op(fs, fused_variant(fs, fused_cat()), plain_cat(), cat_problem({video, action}),
                     "CAT", "cat", {video, action}, {true, true}, call);
}

std::pair<at::Tensor, at::Tensor> joint_split(const at::Tensor& joint, int64_t video_len) {
  static FamilyState& fs = family_state("CAT");
  auto call = [video_len](const CatVariant& v, const std::vector<at::Tensor>& in,
                          const ParamValues& p) { return v.split(in[0], video_len, p); };
  return dispatch_op(fs, fused_variant(fs, fused_cat()), plain_cat(),
                     split_problem(joint, video_len), "CAT", "split", {joint}, {true}, call);
}

}  // namespace sg::kernels
