// QKNORM's ops as the wam model runs them, for the timing harness (kernels/common/timing/).
#include "kernels/common/timing/case_helpers.hpp"
#include "kernels/qk_norm/qk_norm.hpp"

#include <string>

namespace sg::kernels {

using cases::AutocastIf;
using cases::CaseDims;
using cases::Inputs;

std::vector<OpCase> qk_norm_op_cases(const KernelShape& s, int input_sets) {
  const CaseDims d(s);
  const int64_t b = d.b, tv = d.tv, dv = d.dv;
  std::vector<OpCase> out;
  // The q/k RMSNorm of a linear's output (action and cross-attention q/k) and, for the
  // video q/k, followed by the rotation (plain: the plain RMSNorm then the plain RoPE).
  for (bool rope : {false, true}) {
    OpCase c{std::string(rope ? "qknorm+rope " : "qknorm ") + d.low_name + d.autocast_name,
             "QKNORM",
             double(b) * tv * dv * (c10::elementSize(d.low) + 4),
             cases::make_sets(
                 input_sets,
                 [&] {
                   return Inputs{at::randn({b, tv, dv}, d.opts).to(d.low), at::randn({dv}, d.opts)};
                 }),
             {}};
    at::Tensor table;
    if (rope) table = rope3d_table(s.latent_frames, s.grid_h, s.grid_w, d.hd, 10000.0, s.device);
    c.run = [cuda = d.cuda, heads = d.heads, t = table](const Inputs& in, const ParamValues* p) {
      AutocastIf autocast(cuda);
      return Inputs{cases::pick(fused_qk_norm(), plain_qk_norm(), p)
                        .run(QkNormArgs{in[0], in[1], 1e-6, t, heads}, cases::values(p))};
    };
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace sg::kernels
