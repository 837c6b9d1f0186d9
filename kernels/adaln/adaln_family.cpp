// ADALN's registry entry (parameters as data), its plain variant and its problem builders.
#include "kernels/adaln/adaln.hpp"

namespace sg::kernels {
namespace {

// A [Bm, 1, C] modulation vector for rows x [B, S, C]: float32, Bm in {1, B}, unit stride
// along C (a chunk of the [B, 6, C] modulation tensor qualifies).
bool fits_modulation(const at::Tensor& m, const at::Tensor& x) {
  return m.defined() && m.dim() == 3 && x.dim() == 3 && m.scalar_type() == at::kFloat &&
         m.device() == x.device() && m.size(1) == 1 && m.size(2) == x.size(2) &&
         (m.size(0) == 1 || m.size(0) == x.size(0)) && (m.stride(2) == 1 || m.size(2) == 1);
}

class PlainAdaln final : public PlainVariant<AdalnVariant> {
 public:
  at::Tensor run(const AdalnArgs& args, const ParamValues&) const override {
    return adaln_modulate_reference(args.x, args.shift, args.scale, args.eps);
  }
  at::Tensor gated_residual(const at::Tensor& x, const at::Tensor& y, const at::Tensor& gate,
                            const ParamValues&) const override {
    return gated_residual_reference(x, y, gate);
  }
};

}  // namespace

// Defaults: the fastest forward + backward row of the H200 sweeps at wam `base` shapes
// (benchmarks/results/kernels_h200.md: 2026-11-30 second sweep, row_threads 2026-12-02);
// every variant is bitwise the plain path, so a default changes speed only.
// pack: consecutive elements per access (4: 16-byte float / 8-byte bf16 vector
// accesses where C % 4 == 0 and the operands are aligned, else 1). row_threads: threads
// per row where modulate computes the LayerNorm inside (each plays 128 / row_threads of
// ATen's 128 row threads; vec and pack apply to the other paths, row_threads only there).
FamilyInfo adaln_family() {
  return cuda_family("ADALN", "FUSED_ADALN",
                     {{"threads", {128, 256, 512}},
                      {"vec", {1, 2, 4}},
                      {"pack", {1, 4}},
                      {"row_threads", {32, 64, 128}}},
                     {threads_times_vec_at_most<2048>()},
                     {{"threads", 128}, {"vec", 1}, {"pack", 4}, {"row_threads", 128}});
}

const AdalnVariant& plain_adaln() { return variant_instance<PlainAdaln>(); }
#if !SPEEDGATE_WITH_CUDA
const AdalnVariant* fused_adaln() { return nullptr; }
#endif

at::Tensor AdalnVariant::bias_add(const at::Tensor& y, const at::Tensor& bias,
                                  const ParamValues&) const {
  return bias_add_reference(y, bias);
}

Problem adaln_problem(const AdalnArgs& args) {
  if (!args.x.defined()) return {};
  Problem p = base_problem(args.x);
  p.operands_match = fits_modulation(args.shift, args.x) && fits_modulation(args.scale, args.x);
  return p;
}

Problem gated_problem(const at::Tensor& x, const at::Tensor& y, const at::Tensor& gate) {
  if (!x.defined() || !y.defined()) return {};
  Problem p = base_problem(x);
  add_operand(p, y);
  p.operands_match = y.sizes() == x.sizes() && y.device() == x.device() &&
                     (y.scalar_type() == at::kFloat || y.scalar_type() == at::kBFloat16) &&
                     fits_modulation(gate, x);
  return p;
}

Problem bias_problem(const at::Tensor& y, const at::Tensor& bias) {
  if (!y.defined() || !bias.defined()) return {};
  Problem p = base_problem(y);
  add_operand(p, bias);
  p.operands_match = y.dim() >= 2 && bias.dim() == 1 && bias.scalar_type() == at::kFloat &&
                     bias.device() == y.device() && bias.size(0) == y.size(-1);
  return p;
}

}  // namespace sg::kernels
