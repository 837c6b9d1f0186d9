// MoT layer (see mot_layer.hpp). Elementwise chains go through the kernel ops, which run
// the fused variant of a family selected by its switch (FUSED_ROPE, FAST_CAT, FUSED_ADALN,
// FUSED_QK_NORM; see kernels/common/dispatch.hpp) and the plain reference ops otherwise.
#include "trainer/workload/wam/mot_layer.hpp"

#include "kernels/adaln/adaln.hpp"
#include "kernels/cat/cat.hpp"
#include "kernels/qk_norm/qk_norm.hpp"
#include "trainer/model/init_device.hpp"

#include <algorithm>
#include <cmath>

namespace sg::trainer {
namespace {

at::Tensor modulate(const at::Tensor& x, const at::Tensor& shift, const at::Tensor& scale) {
  return sg::kernels::adaln_modulate(x, shift, scale, /*eps=*/1e-6);
}

at::Tensor gated(const at::Tensor& x, const at::Tensor& y, const at::Tensor& gate) {
  return sg::kernels::gated_residual(x, y, gate);
}

}  // namespace

JointAttentionImpl::JointAttentionImpl(const WamConfig& c) : heads(c.heads), head_dim(c.head_dim) {
  const int64_t dv = c.video_dim, da = c.action_dim, hd = c.attn_dim();
  register_attention_projections(*this, "_v", dv, hd, {q_v, k_v, v_v, o_v, norm_q_v, norm_k_v});
  register_attention_projections(*this, "_a", da, hd, {q_a, k_a, v_a, o_a, norm_q_a, norm_k_a});
}

std::pair<at::Tensor, at::Tensor> JointAttentionImpl::forward(const at::Tensor& h_v,
                                                              const at::Tensor& h_a,
                                                              const at::Tensor& rope,
                                                              const at::Tensor& mask,
                                                              AttnBackend backend) {
  const int64_t b = h_v.size(0), tv = h_v.size(1), ta = h_a.size(1);
  // rope(norm(x).view(b, tv, heads, head_dim)): one pass when FUSED_QK_NORM and FUSED_ROPE are both
  // on.
  auto qv = sg::kernels::rms_norm_rope(q_v(h_v), norm_q_v->weight, norm_q_v->eps, rope, heads);
  auto kv = sg::kernels::rms_norm_rope(k_v(h_v), norm_k_v->weight, norm_k_v->eps, rope, heads);
  auto vv = v_v(h_v);
  auto qa = norm_q_a(q_a(h_a));
  auto ka = norm_k_a(k_a(h_a));
  auto va = v_a(h_a);
  const int64_t hd = heads * head_dim;
  auto q = sg::kernels::joint_cat(qv.reshape({b, tv, hd}), qa).view({b, tv + ta, heads, head_dim});
  auto k = sg::kernels::joint_cat(kv.reshape({b, tv, hd}), ka).view({b, tv + ta, heads, head_dim});
  auto v = sg::kernels::joint_cat(vv, va).view({b, tv + ta, heads, head_dim});
  auto out = attention(q, k, v, mask, backend);
  auto [out_v, out_a] = sg::kernels::joint_split(out, tv);
  return {o_v(out_v), o_a(out_a)};
}

MoTLayerImpl::MoTLayerImpl(const WamConfig& c) {
  const auto opts = parameter_options();
  const double sv = std::sqrt(double(c.video_dim)), sa = std::sqrt(double(c.action_dim));
  modulation_v = register_parameter("modulation_v", torch::randn({1, 6, c.video_dim}, opts) / sv);
  modulation_a = register_parameter("modulation_a", torch::randn({1, 6, c.action_dim}, opts) / sa);
  attn = register_module("attn", JointAttention(c));
  const int64_t action_heads = std::max<int64_t>(1, c.action_dim / c.head_dim);
  cross_v = register_module("cross_v", CrossAttention(c.video_dim, c.heads));
  cross_a = register_module("cross_a", CrossAttention(c.action_dim, action_heads));
  mlp_v = register_module("mlp_v", Mlp(c.video_dim, c.video_ffn));
  mlp_a = register_module("mlp_a", Mlp(c.action_dim, c.action_ffn));
}

TensorList MoTLayerImpl::forward(const TensorList& in, const LayerOptions& opt) {
  // shift/scale/gate for attention and MLP, float32 like Wan's modulation.
  auto mv = (modulation_v + in[kVideoMod]).chunk(6, /*dim=*/1);
  auto ma = (modulation_a + in[kActionMod]).chunk(6, /*dim=*/1);
  auto h_v = modulate(in[kVideo], mv[0], mv[1]);
  auto h_a = modulate(in[kAction], ma[0], ma[1]);

  at::Tensor y_v, y_a;
  const AttnBackend backend = opt.backend;
  if (opt.checkpoint_attention) {
    auto body = [this, backend](const TensorList& x) -> TensorList {
      auto [yv, ya] = attn->forward(x[0], x[1], x[2], x[3], backend);
      return {yv, ya};
    };
    auto params = attn->parameters();
    auto out = checkpointed(body, {h_v, h_a, in[kRopeTable], in[kJointMask]}, params);
    y_v = out[0];
    y_a = out[1];
  } else {
    std::tie(y_v, y_a) = attn->forward(h_v, h_a, in[kRopeTable], in[kJointMask], backend);
  }
  auto x_v = gated(in[kVideo], y_v, mv[2]);
  auto x_a = gated(in[kAction], y_a, ma[2]);

  x_v = x_v + cross_v->forward(x_v, in[kVideoContext], in[kContextMask], backend);
  x_a = x_a + cross_a->forward(x_a, in[kActionContext], in[kContextMask], backend);

  x_v = gated(x_v, mlp_v(modulate(x_v, mv[3], mv[4])), mv[5]);
  x_a = gated(x_a, mlp_a(modulate(x_a, ma[3], ma[4])), ma[5]);
  return {x_v, x_a};
}

}  // namespace sg::trainer
