// CAT's fused variant: the [video; action] concatenation and the attention-output split
// as one row-copy kernel each (joint_cat_fused.cu), as LibTorch autograd
// functions mirrored in backward: cat's backward splits the grad (as views, like the
// reference's CatBackward); split's backward is the cat kernel with "+ 0" per element
// when both grads exist (the engine sums the reference's two zero-filled slice grads), a
// raw copy next to zeros when one is missing.
#if SPEEDGATE_WITH_CUDA

#include "kernels/cat/cat.hpp"
#include "kernels/cat/cat_launchers.hpp"
#include "kernels/common/fused_checks.hpp"

namespace sg::kernels {
namespace {

class JointCatFunction : public torch::autograd::Function<JointCatFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& video, const at::Tensor& action,
                            int64_t threads, int64_t rows_per_block, bool flat) {
    ctx->saved_data["video_len"] = video.size(1);
    return cuda::joint_cat(video, action, threads, rows_per_block, flat, /*plus_zero=*/false);
  }

  // The reference's CatBackward hands out narrow views of the grad: so does this (no
  // copy; a consumer that needs dense rows copies them exactly as it would there).
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const at::Tensor& g = grads[0];
    if (!g.defined()) return {at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
    const int64_t video_len = ctx->saved_data["video_len"].toInt();
    return {g.narrow(1, 0, video_len), g.narrow(1, video_len, g.size(1) - video_len), at::Tensor(),
            at::Tensor(), at::Tensor()};
  }
};

class JointSplitFunction : public torch::autograd::Function<JointSplitFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& joint, int64_t video_len,
                               int64_t threads, int64_t rows_per_block, bool flat) {
    // An unused output's grad must stay undefined (not zeros): it decides "+ 0" below.
    ctx->set_materialize_grads(false);
    ctx->saved_data["video_len"] = video_len;
    ctx->saved_data["seq"] = joint.size(1);
    ctx->saved_data["threads"] = threads;
    ctx->saved_data["rows_per_block"] = rows_per_block;
    ctx->saved_data["flat"] = flat;
    auto [video, action] = cuda::joint_split(joint, video_len, threads, rows_per_block, flat);
    return {video, action};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    at::Tensor gv = grads[0], ga = grads[1];
    if (!gv.defined() && !ga.defined())
      return {at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
    const bool both = gv.defined() && ga.defined();
    const int64_t video_len = ctx->saved_data["video_len"].toInt(),
                  seq = ctx->saved_data["seq"].toInt();
    if (!gv.defined()) gv = at::zeros({ga.size(0), video_len, ga.size(2)}, ga.options());
    if (!ga.defined()) ga = at::zeros({gv.size(0), seq - video_len, gv.size(2)}, gv.options());
    auto joint =
        cuda::joint_cat(dense_aligned(gv), dense_aligned(ga), ctx->saved_data["threads"].toInt(),
                        ctx->saved_data["rows_per_block"].toInt(), ctx->saved_data["flat"].toBool(),
                        /*plus_zero=*/both);
    return {joint, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

class FusedCat final : public FusedVariant<CatVariant> {
 public:
  Status can_implement(const Problem& problem, const ParamValues& params) const override {
    return fused_checks(family("CAT"), problem, params,
                        {at::kFloat, at::kBFloat16, at::kHalf, at::kDouble}, /*min_alignment=*/1,
                        /*well_formed=*/problem.shape.size() == 3);
  }

  at::Tensor run(const CatArgs& args, const ParamValues& params) const override {
    const auto p = with_defaults(family("CAT"), params);
    return JointCatFunction::apply(args.video, args.action, p.at("threads"), p.at("rows_per_block"),
                                   p.at("flat") == 1);
  }

  std::pair<at::Tensor, at::Tensor> split(const at::Tensor& joint, int64_t video_len,
                                          const ParamValues& params) const override {
    const auto p = with_defaults(family("CAT"), params);
    auto out = JointSplitFunction::apply(joint, video_len, p.at("threads"), p.at("rows_per_block"),
                                         p.at("flat") == 1);
    return {out[0], out[1]};
  }
};

}  // namespace

const CatVariant* fused_cat() { return &variant_instance<FusedCat>(); }

}  // namespace sg::kernels

#endif  // SPEEDGATE_WITH_CUDA
