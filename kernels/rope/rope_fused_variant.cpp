// ROPE's fused variant: the CUDA rotation (rope3d_fused.cu) as a LibTorch
// autograd function whose backward is the fused backward kernel. Bitwise the plain
// variant (rope3d_apply_reference) in forward and backward; see fused_math.hpp.
#if SPEEDGATE_WITH_CUDA

#include "kernels/common/fused_checks.hpp"
#include "kernels/rope/rope.hpp"
#include "kernels/rope/rope_launchers.hpp"

namespace sg::kernels {
namespace {

class Rope3dFunction : public torch::autograd::Function<Rope3dFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& table,
                            int64_t threads, int64_t vec) {
    ctx->save_for_backward({table});
    ctx->saved_data["threads"] = threads;
    ctx->saved_data["vec"] = vec;
    return cuda::rope3d_forward(x, table, threads, vec);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto table = ctx->get_saved_variables()[0];
    at::Tensor gx;
    if (grads[0].defined()) {
      gx = cuda::rope3d_backward(dense_aligned(grads[0]), table, ctx->saved_data["threads"].toInt(),
                                 ctx->saved_data["vec"].toInt());
    }
    return {gx, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

class FusedRope final : public FusedVariant<RopeVariant> {
 public:
  Status can_implement(const Problem& problem, const ParamValues& params) const override {
    // 16 bytes: the float64 (cos, sin) pairs are read as double2; x pairs need 2 elements.
    return fused_checks(family("ROPE"), problem, params,
                        {at::kFloat, at::kBFloat16, at::kHalf, at::kDouble}, /*min_alignment=*/16,
                        /*well_formed=*/problem.shape.size() == 4 && problem.shape[3] % 2 == 0);
  }

  at::Tensor run(const RopeArgs& args, const ParamValues& params) const override {
    const auto p = with_defaults(family("ROPE"), params);
    return Rope3dFunction::apply(args.x, args.table, p.at("threads"), p.at("vec"));
  }
};

}  // namespace

const RopeVariant* fused_rope() { return &variant_instance<FusedRope>(); }

}  // namespace sg::kernels

#endif  // SPEEDGATE_WITH_CUDA
