// CAT's ops as the model calls them, through the dispatch and its first-call check.
#include "kernels/cat/cat.hpp"
#include "kernels/common/first_call.hpp"

namespace sg::kernels {
namespace {

const FamilyDispatch<CatVariant>& cat_dispatch() {
  static const FamilyDispatch<CatVariant> kCat("CAT", fused_cat(), plain_cat());
  return kCat;
}

}  // namespace

at::Tensor joint_cat(const at::Tensor& video, const at::Tensor& action) {
  return cat_dispatch().run(cat_problem({video, action}), "cat", {video, action}, {true, true},
                            run_on_inputs);
}

std::pair<at::Tensor, at::Tensor> joint_split(const at::Tensor& joint, int64_t video_len) {
  return cat_dispatch().run(
      split_problem(joint, video_len), "split", {joint}, {true},
      [video_len](const CatVariant& v, const std::vector<at::Tensor>& in, const ParamValues& p) {
        return v.split(in[0], video_len, p);
      });
}

}  // namespace sg::kernels
