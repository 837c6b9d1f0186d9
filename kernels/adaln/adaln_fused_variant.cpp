// ADALN's fused variant as LibTorch autograd functions over adaln_fused.cu and
// adaln_layer_norm.cu:
//  - modulate: layer_norm(x) * (1 + scale) + shift. Where ATen's LayerNorm takes its
//    vectorised path (C % 4 == 0, float32 rows), one kernel computes the row statistics in
//    ATen's order and modulates (forward), one fuses LayerNorm backward and modulate's
//    elementwise grads (backward); scale/shift grads are the same at::sum_to autograd runs.
//    Elsewhere the statistics stay ATen's native_layer_norm and only the modulation is
//    fused (forward and backward), with native_layer_norm_backward for x's grad.
//  - gated residual: x + y * gate, one pass; backward one pass plus sum_to for the gate.
//  - bias add: y + bias (a linear layer's), one pass; backward the engine's own ops.
// Under CUDA autocast the reference's layer_norm runs in float32 on a float32 copy of a
// bf16/fp16 x and its grad is cast back: modulate does the same (to_float).
#if SPEEDGATE_WITH_CUDA

#include "kernels/adaln/adaln.hpp"
#include "kernels/adaln/adaln_launchers.hpp"
#include "kernels/common/fused_checks.hpp"

#include <ATen/autocast_mode.h>
#include <tuple>

namespace sg::kernels {
namespace {

class ModulateFunction : public torch::autograd::Function<ModulateFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& shift,
                            const at::Tensor& scale, double eps, bool to_float, int64_t threads,
                            int64_t vec, int64_t pack, int64_t row_threads) {
    ctx->saved_data["shift_sizes"] = shift.sizes().vec();
    ctx->saved_data["x_dtype"] = static_cast<int64_t>(x.scalar_type());
    ctx->saved_data["to_float"] = to_float;
    ctx->saved_data["threads"] = threads;
    ctx->saved_data["vec"] = vec;
    ctx->saved_data["pack"] = pack;
    ctx->saved_data["row_threads"] = row_threads;
    const bool layer_norm_inside = cuda::modulate_layer_norm_applies(x, scale, shift, to_float);
    ctx->saved_data["layer_norm_inside"] = layer_norm_inside;
    if (layer_norm_inside) {
      auto [out, mean, rstd] =
          cuda::modulate_layer_norm_forward(x, scale, shift, eps, threads, row_threads);
      ctx->save_for_backward({x, mean, rstd, scale});
      return out;
    }
    const at::Tensor xin = to_float ? x.to(at::kFloat) : x;
    const int64_t channels = x.size(-1);
    auto [normed, mean, rstd] =
        at::native_layer_norm(xin, {channels}, /*weight=*/{}, /*bias=*/{}, eps);
    ctx->save_for_backward({xin, mean, rstd, scale, normed});
    return cuda::modulate_forward(normed, scale, shift, threads, vec, pack);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const at::Tensor g = dense_aligned(grads[0]);  // materialized: defined
    const auto saved = ctx->get_saved_variables();
    const auto &xin = saved[0], &mean = saved[1], &rstd = saved[2], &scale = saved[3];
    const int64_t threads = ctx->saved_data["threads"].toInt();
    at::Tensor dx, g_scale_elem;
    if (ctx->saved_data["layer_norm_inside"].toBool()) {
      // xin is x itself here: the kernel widens it and casts the grad back to its dtype.
      std::tie(dx, g_scale_elem) = cuda::modulate_layer_norm_backward(
          g, xin, mean, rstd, scale, threads, ctx->saved_data["row_threads"].toInt());
    } else {
      at::Tensor g_normed;
      std::tie(g_normed, g_scale_elem) =
          cuda::modulate_backward(g, saved[4], scale, threads, ctx->saved_data["vec"].toInt(),
                                  ctx->saved_data["pack"].toInt());
      dx = std::get<0>(at::native_layer_norm_backward(g_normed, xin, {xin.size(-1)}, mean, rstd,
                                                      /*weight=*/{},
                                                      /*bias=*/{}, {true, false, false}));
      if (ctx->saved_data["to_float"].toBool()) {
        dx = dx.to(static_cast<at::ScalarType>(ctx->saved_data["x_dtype"].toInt()));
      }
    }
    // The reductions autograd's engine runs for the reference's broadcast operands.
    auto g_scale = at::sum_to(g_scale_elem, scale.sizes());
    auto g_shift = at::sum_to(g, ctx->saved_data["shift_sizes"].toIntVector());
    return {dx,           g_shift,      g_scale,      at::Tensor(), at::Tensor(),
            at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

class GatedFunction : public torch::autograd::Function<GatedFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& y,
                            const at::Tensor& gate, int64_t threads, int64_t vec, int64_t pack) {
    ctx->save_for_backward({y, gate});
    ctx->saved_data["x_dtype"] = static_cast<int64_t>(x.scalar_type());
    ctx->saved_data["threads"] = threads;
    ctx->saved_data["vec"] = vec;
    ctx->saved_data["pack"] = pack;
    return cuda::gated_forward(x, y, gate, threads, vec, pack);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &y = saved[0], &gate = saved[1];
    auto [g_x, g_y, g_gate_elem] = cuda::gated_backward(
        dense_aligned(grads[0]), static_cast<at::ScalarType>(ctx->saved_data["x_dtype"].toInt()), y,
        gate, ctx->saved_data["threads"].toInt(), ctx->saved_data["vec"].toInt(),
        ctx->saved_data["pack"].toInt());
    auto g_gate = at::sum_to(g_gate_elem, gate.sizes());
    return {g_x, g_y, g_gate, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// y + bias in one vectorised pass, where ATen's in-place add of a float32 bias to a bf16
// tensor runs its casting loop (the H200 profile: ~1.8 TB/s, 626 calls per fast step).
// Backward as the engine runs the reference's in-place add: y's grad is the incoming grad,
// the bias's is at::sum_to of it in the grad's dtype (the engine then casts it to float32,
// for the reference and for this function alike).
class BiasAddFunction : public torch::autograd::Function<BiasAddFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& y, const at::Tensor& bias,
                            int64_t threads, int64_t vec, int64_t pack) {
    ctx->saved_data["bias_sizes"] = bias.sizes().vec();
    return cuda::bias_add_forward(y, bias, threads, vec, pack);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const at::Tensor& g = grads[0];
    return {g, at::sum_to(g, ctx->saved_data["bias_sizes"].toIntVector()), at::Tensor(),
            at::Tensor(), at::Tensor()};
  }
};

class FusedAdaln final : public FusedVariant<AdalnVariant> {
 public:
  Status can_implement(const Problem& problem, const ParamValues& params) const override {
    return fused_checks(family("ADALN"), problem, params, {at::kFloat, at::kBFloat16},
                        /*min_alignment=*/1, /*well_formed=*/problem.shape.size() == 3);
  }

  at::Tensor run(const AdalnArgs& args, const ParamValues& params) const override {
    const auto p = with_defaults(family("ADALN"), params);
    const bool to_float = args.x.is_cuda() && at::autocast::is_autocast_enabled(at::kCUDA) &&
                          args.x.scalar_type() != at::kFloat;
    return ModulateFunction::apply(args.x, args.shift, args.scale, args.eps, to_float,
                                   p.at("threads"), p.at("vec"), p.at("pack"), p.at("row_threads"));
  }

  at::Tensor gated_residual(const at::Tensor& x, const at::Tensor& y, const at::Tensor& gate,
                            const ParamValues& params) const override {
    const auto p = with_defaults(family("ADALN"), params);
    return GatedFunction::apply(x, y, gate, p.at("threads"), p.at("vec"), p.at("pack"));
  }

  at::Tensor bias_add(const at::Tensor& y, const at::Tensor& bias,
                      const ParamValues& params) const override {
    const auto p = with_defaults(family("ADALN"), params);
    return BiasAddFunction::apply(y, bias, p.at("threads"), p.at("vec"), p.at("pack"));
  }
};

}  // namespace

const AdalnVariant* fused_adaln() { return &variant_instance<FusedAdaln>(); }

}  // namespace sg::kernels

#endif  // SPEEDGATE_WITH_CUDA
