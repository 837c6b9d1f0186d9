// QKNORM's fused variant as a LibTorch autograd function over qk_norm_fused.cu:
// RMSNorm (rms_norm_reference) with the elementwise chains fused and the reductions left
// to ATen, so every sum keeps ATen's order and the result is bitwise the reference's:
//  forward:  one pass per row (qk_norm_rows.cu: the mean of squares summed in ATen's order,
//            + eps, rsqrt, normalize, cast, weight, and rotate for the video q/k) where
//            ATen's mean is one warp per row; elsewhere squares (one pass) -> ATen mean,
//            + eps, rsqrt on [B, S, 1] -> normalize, cast, weight (and rotate) in one pass;
//  backward: one pass for the two reduction operands -> ATen sum_to for r's and w's
//            grads, rsqrt and mean backward on [B, S, 1] as autograd runs them -> one pass
//            for x's grad (MulBackward + PowBackward summed, cast to x's dtype).
// Plain's float32 copy of x, its squares' autograd buffers and the normed tensors are
// never materialized; x itself (bf16 under autocast) and r are saved instead.
#if SPEEDGATE_WITH_CUDA

#include "kernels/common/fused_checks.hpp"
#include "kernels/qk_norm/qk_norm.hpp"
#include "kernels/qk_norm/qk_norm_launchers.hpp"

#include <tuple>

namespace sg::kernels {
namespace {

// The norm-only form has no rotation table. The autograd function only takes defined
// tensors (LibTorch records device and shape of every tensor argument), so "no table" travels
// as an empty tensor and turns back into an undefined one at the launchers.
at::Tensor no_table_sentinel(const at::Tensor& x) {
  return at::empty({0}, x.options().dtype(at::kDouble));
}
at::Tensor table_or_none(const at::Tensor& t) { return t.numel() == 0 ? at::Tensor() : t; }

class QkNormFunction : public torch::autograd::Function<QkNormFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight,
                            const at::Tensor& table_arg, double eps, int64_t heads, int64_t threads,
                            int64_t vec, int64_t row_warps) {
    const at::Tensor table = table_or_none(table_arg);
    at::Tensor out, r;
    if (cuda::rms_norm_rows_applies(x, weight)) {
      // Where ATen's mean is one warp per row: one pass, the sum in ATen's order.
      std::tie(out, r) = cuda::rms_norm_rows(x, weight, table, heads, eps, threads, row_warps);
    } else {
      // The reference's xf.pow(2).mean(-1, keepdim) + eps and rsqrt, on the same float32 tensor.
      r = at::rsqrt(cuda::rms_square(x, threads, vec).mean(-1, /*keepdim=*/true) + eps);
      out = cuda::rms_normalize(x, r, weight, table, heads, threads, vec);
    }
    ctx->save_for_backward({x, r, weight, table_arg});
    ctx->saved_data["heads"] = heads;
    ctx->saved_data["threads"] = threads;
    ctx->saved_data["vec"] = vec;
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &x = saved[0], &r = saved[1], &weight = saved[2];
    const at::Tensor table = table_or_none(saved[3]);
    const int64_t heads = ctx->saved_data["heads"].toInt(),
                  threads = ctx->saved_data["threads"].toInt(),
                  vec = ctx->saved_data["vec"].toInt();
    const at::Tensor g = dense_aligned(grads[0]);  // materialized: defined
    auto [g_r_elem, g_w_elem] =
        cuda::rms_backward_products(g, x, r, weight, table, heads, threads, vec);
    // What the engine reduces for the reference's broadcast operands (r [B, S, 1], w [C]).
    auto g_r = at::sum_to(g_r_elem, r.sizes());
    auto g_w = at::sum_to(g_w_elem, weight.sizes());
    // RsqrtBackward: -0.5 * grad * result.pow(3); AddBackward (eps) passes it on;
    // MeanBackward: grad expanded / C (the division runs on the row; every element of
    // the expanded grad gets the same value from the same kernel).
    auto g_s = (g_r * -0.5) * r.pow(3);
    auto g_mean = g_s / x.size(2);
    auto gx = cuda::rms_grad_input(g, x, r, weight, g_mean, table, heads, threads, vec);
    return {gx,           g_w,          at::Tensor(), at::Tensor(),
            at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

class FusedQkNorm final : public FusedVariant<QkNormVariant> {
 public:
  Status can_implement(const Problem& problem, const ParamValues& params) const override {
    // 16 bytes with the rotation: the float64 (cos, sin) pairs are read as double2.
    const bool rope = problem.shape.size() == 4;
    return fused_checks(family("QKNORM"), problem, params, {at::kFloat, at::kBFloat16},
                        /*min_alignment=*/rope ? 16 : 1,
                        /*well_formed=*/problem.shape.size() == 3 || rope);
  }

  at::Tensor run(const QkNormArgs& args, const ParamValues& params) const override {
    const auto p = with_defaults(family("QKNORM"), params);
    const at::Tensor table = args.table.defined() ? args.table : no_table_sentinel(args.x);
    return QkNormFunction::apply(args.x, args.weight, table, args.eps, args.heads, p.at("threads"),
                                 p.at("vec"), p.at("row_warps"));
  }
};

}  // namespace

const QkNormVariant* fused_qk_norm() { return &variant_instance<FusedQkNorm>(); }

}  // namespace sg::kernels

#endif  // SPEEDGATE_WITH_CUDA
