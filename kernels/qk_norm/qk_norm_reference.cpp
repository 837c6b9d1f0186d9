// Reference q/k RMSNorm (Wan's WanRMSNorm) and RMSNorm followed by the 3-D RoPE rotation.
#include "kernels/qk_norm/qk_norm.hpp"

namespace sg::kernels {

at::Tensor rms_norm_reference(const at::Tensor& x, const at::Tensor& weight, double eps) {
  auto xf = x.to(at::kFloat);
  auto normed = xf * at::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return normed.to(x.scalar_type()) * weight;
}

at::Tensor rms_norm_rope_reference(const at::Tensor& x, const at::Tensor& weight, double eps,
                                   const at::Tensor& table, int64_t heads) {
  const int64_t b = x.size(0), s = x.size(1), c = x.size(2);
  return rope3d_apply_reference(rms_norm_reference(x, weight, eps).view({b, s, heads, c / heads}),
                                table);
}

}  // namespace sg::kernels
