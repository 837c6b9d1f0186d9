// The lm decoder block (see lm_block.hpp). RoPE goes through the kernel op, which runs the
// fused ROPE variant when FUSED_ROPE selects it and the float64 reference otherwise.
#include "trainer/workload/lm/lm_block.hpp"

#include "kernels/rope/rope.hpp"

namespace sg::trainer {

at::Tensor rope1d_table(int64_t len, int64_t head_dim, double theta, c10::Device device) {
  auto opts = at::TensorOptions().dtype(at::kDouble).device(device);
  auto inv_freq =
      at::pow(theta, at::arange(0, head_dim, 2, opts).div(static_cast<double>(head_dim)))
          .reciprocal();
  auto angles = at::outer(at::arange(len, opts), inv_freq);  // [len, head_dim/2]
  return at::stack({at::cos(angles), at::sin(angles)}, /*dim=*/-1).contiguous();
}

at::Tensor document_causal_mask(const at::Tensor& doc_ids) {
  const int64_t len = doc_ids.size(1);
  auto causal = at::ones({len, len}, doc_ids.options().dtype(at::kBool)).tril();
  auto same_doc = doc_ids.unsqueeze(2) == doc_ids.unsqueeze(1);  // [B, L, L]
  return same_doc.logical_and(causal).unsqueeze(1);
}

LmBlockImpl::LmBlockImpl(const LmConfig& c, bool osft)
    : heads(c.heads), kv_heads(c.kv_heads), head_dim(c.head_dim) {
  attn_norm = register_module("attn_norm", RMSNorm(c.dim, c.norm_eps));
  q = register_module("q", LmLinear(c.dim, c.q_dim(), osft));
  k = register_module("k", LmLinear(c.dim, c.kv_dim(), osft));
  v = register_module("v", LmLinear(c.dim, c.kv_dim(), osft));
  o = register_module("o", LmLinear(c.q_dim(), c.dim, osft));
  mlp_norm = register_module("mlp_norm", RMSNorm(c.dim, c.norm_eps));
  gate = register_module("gate", LmLinear(c.dim, c.ffn, osft));
  up = register_module("up", LmLinear(c.dim, c.ffn, osft));
  down = register_module("down", LmLinear(c.ffn, c.dim, osft));
}

at::Tensor LmBlockImpl::forward(const at::Tensor& x, const at::Tensor& rope, const at::Tensor& mask,
                                AttnBackend backend) {
  const int64_t b = x.size(0), len = x.size(1), group = heads / kv_heads;
  auto h = attn_norm(x);
  auto qh = sg::kernels::rope_apply(q(h).view({b, len, heads, head_dim}), rope);
  auto kh = sg::kernels::rope_apply(k(h).view({b, len, kv_heads, head_dim}), rope);
  auto vh = v(h).view({b, len, kv_heads, head_dim});
  // Grouped-query attention: each key/value head serves `group` consecutive query heads.
  kh = kh.unsqueeze(3)
           .expand({b, len, kv_heads, group, head_dim})
           .reshape({b, len, heads, head_dim});
  vh = vh.unsqueeze(3)
           .expand({b, len, kv_heads, group, head_dim})
           .reshape({b, len, heads, head_dim});
  auto y = x + o(attention(qh, kh, vh, mask, backend));
  auto m = mlp_norm(y);
  return y + down(at::silu(gate(m)) * up(m));
}

}  // namespace sg::trainer
