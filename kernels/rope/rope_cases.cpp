// ROPE's op as the wam model runs it, for the timing harness (kernels/common/timing/).
#include "kernels/common/timing/case_helpers.hpp"
#include "kernels/rope/rope.hpp"

namespace sg::kernels {

using cases::CaseDims;
using cases::Inputs;

std::vector<OpCase> rope_op_cases(const KernelShape& s, int input_sets) {
  const CaseDims d(s);
  // q/k after the float32 RMSNorm: [B, Sv, heads, hd] float32.
  OpCase c{"rope fp32",
           "ROPE",
           2.0 * d.b * d.tv * d.dv * 4,
           cases::make_sets(input_sets,
                            [&] {
                              return Inputs{at::randn({d.b, d.tv, d.heads, d.hd}, d.opts)};
                            }),
           {}};
  c.run = [t = rope3d_table(s.latent_frames, s.grid_h, s.grid_w, d.hd, 10000.0, s.device)](
              const Inputs& in, const ParamValues* p) {
    return Inputs{cases::pick(fused_rope(), plain_rope(), p).run({in[0], t}, cases::values(p))};
  };
  std::vector<OpCase> out;
  out.push_back(std::move(c));
  return out;
}

}  // namespace sg::kernels
