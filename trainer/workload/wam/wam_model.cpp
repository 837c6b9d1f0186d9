// The wam backbone (see wam_model.hpp).
#include "trainer/workload/wam/wam_model.hpp"

#include "kernels/adaln/adaln.hpp"
#include "kernels/rope/rope.hpp"
#include "trainer/model/init_device.hpp"

#include <cmath>

namespace sg::trainer {

at::Tensor build_joint_mask(const WamConfig& c, c10::Device device, bool* all_visible) {
  const int64_t tv = c.video_tokens(), s = c.tokens_per_sample();
  const int64_t per_frame = c.grid_h() * c.grid_w();
  auto mask = torch::zeros({s, s}, torch::kBool);
  mask.narrow(0, 0, tv).narrow(1, 0, tv).fill_(true);  // video sees video
  mask.narrow(0, 0, per_frame)
      .narrow(1, per_frame, tv - per_frame)
      .fill_(false);                       // first frame causal
  mask.narrow(0, tv, s - tv).fill_(true);  // actions see everything
  if (all_visible != nullptr)
    *all_visible = mask.all().item<bool>();  // on the host: no device sync
  return mask.to(device);
}

WamModelImpl::WamModelImpl(const WamConfig& c, ModelOptions o) : cfg(c), opt(o) {
  const int64_t dv = c.video_dim, da = c.action_dim;
  patch_embed = register_module("patch_embed", Linear(c.patch_features(), dv));
  action_embed = register_module("action_embed", Linear(c.action_features, da));
  text_v1 = register_module("text_v1", Linear(c.text_dim, dv));
  text_v2 = register_module("text_v2", Linear(dv, dv));
  text_a1 = register_module("text_a1", Linear(c.text_dim, da));
  text_a2 = register_module("text_a2", Linear(da, da));
  time_v = register_module("time_v", TimeEmbedding(c.freq_dim, dv));
  time_a = register_module("time_a", TimeEmbedding(c.freq_dim, da));
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.layers; ++i) layers->push_back(MoTLayer(c));
  head_mod_v = register_parameter(
      "head_mod_v", torch::randn({1, 2, dv}, parameter_options()) / std::sqrt(double(dv)));
  head_mod_a = register_parameter(
      "head_mod_a", torch::randn({1, 2, da}, parameter_options()) / std::sqrt(double(da)));
  head_v = register_module("head_v", Linear(dv, c.patch_features()));
  head_a = register_module("head_a", Linear(da, c.action_features));
}

bool WamModelImpl::checkpoints_layer(int64_t i) const {
  return opt.ckpt_layers < 0 || i < opt.ckpt_layers;
}

at::Tensor WamModelImpl::rope_table(c10::Device device) {
  auto build = [&] {
    return sg::kernels::rope3d_table(cfg.latent_frames(), cfg.grid_h(), cfg.grid_w(), cfg.head_dim,
                                     /*theta=*/10000.0, device);
  };
  if (!opt.memoize_tables) return build();
  if (!rope_cache_.defined() || rope_cache_.device() != device) rope_cache_ = build();
  return rope_cache_;
}

at::Tensor WamModelImpl::joint_mask(c10::Device device, bool* all_visible) {
  if (!opt.memoize_tables) return build_joint_mask(cfg, device, all_visible);
  if (!mask_cache_.defined() || mask_cache_.device() != device) {
    mask_cache_ = build_joint_mask(cfg, device, &mask_all_visible_);
  }
  *all_visible = mask_all_visible_;
  return mask_cache_;
}

at::Tensor WamModelImpl::patchify(const at::Tensor& x) const {
  // [B, z, F, h, w] -> [B, F * gh * gw, z * ph * pw]
  const int64_t b = x.size(0), z = x.size(1), f = x.size(2);
  const int64_t gh = cfg.grid_h(), gw = cfg.grid_w(), ph = cfg.patch_h, pw = cfg.patch_w;
  return x.reshape({b, z, f, gh, ph, gw, pw})
      .permute({0, 2, 3, 5, 1, 4, 6})
      .reshape({b, f * gh * gw, z * ph * pw});
}

at::Tensor WamModelImpl::unpatchify(const at::Tensor& tokens) const {
  const int64_t b = tokens.size(0), z = cfg.latent_channels, f = cfg.latent_frames();
  const int64_t gh = cfg.grid_h(), gw = cfg.grid_w(), ph = cfg.patch_h, pw = cfg.patch_w;
  return tokens.reshape({b, f, gh, gw, z, ph, pw})
      .permute({0, 4, 1, 2, 5, 3, 6})
      .reshape({b, z, f, gh * ph, gw * pw});
}

Prediction WamModelImpl::forward(const at::Tensor& x_t, const at::Tensor& a_t, const at::Tensor& t,
                                 const at::Tensor& context, const at::Tensor& context_mask,
                                 bool context_all_visible) {
  const auto device = x_t.device();
  auto x_v = patch_embed(patchify(x_t));
  auto x_a = action_embed(a_t);
  auto [e_v, e0_v] = time_v(t);
  auto [e_a, e0_a] = time_a(t);
  auto ctx_v = text_v2(at::gelu(text_v1(context), "tanh"));
  auto ctx_a = text_a2(at::gelu(text_a1(context), "tanh"));
  const auto rope = rope_table(device);
  bool joint_all_visible = false;
  const auto mask = joint_mask(device, &joint_all_visible);
  // The SDPA backends take an all-visible mask as none (another kernel). attention() never
  // reads a mask on the host (a device sync per call, impossible under graph capture):
  // the flags come from the host copies the masks were made from.
  const bool sdpa = opt.backend != AttnBackend::kMath;
  const at::Tensor layer_mask = sdpa && joint_all_visible ? at::Tensor() : mask;
  const at::Tensor layer_context_mask = sdpa && context_all_visible ? at::Tensor() : context_mask;
  const bool graphs = opt.cuda_graphs && !opt.mixed_attn_ckpt;
  if (graphs && graphs_.empty()) {
    for (int64_t i = 0; i < cfg.layers; ++i)
      graphs_.push_back(std::make_shared<GraphedLayer>("wam." + std::to_string(i)));
  }

  for (int64_t i = 0; i < cfg.layers; ++i) {
    auto layer = layers->ptr<MoTLayerImpl>(i);
    TensorList in(kNumLayerInputs);
    in[kVideo] = x_v, in[kAction] = x_a, in[kVideoMod] = e0_v, in[kActionMod] = e0_a;
    in[kVideoContext] = ctx_v, in[kActionContext] = ctx_a, in[kContextMask] = layer_context_mask;
    in[kRopeTable] = rope, in[kJointMask] = layer_mask;
    TensorList out;
    if (checkpoints_layer(i)) {
      const LayerOptions lo{opt.backend, /*checkpoint_attention=*/false};
      out = checkpointed([layer, lo](const TensorList& x) { return layer->forward(x, lo); }, in,
                         layer->parameters());
    } else if (graphs) {
      // Replayed from CUDA graphs; like a checkpointed layer it hands back one gradient
      // per input. A layer that checkpoints its attention (MIXED_ATTN_CKPT) is not graphed:
      // the recompute would need the activations the graph keeps.
      const LayerOptions lo{opt.backend, /*checkpoint_attention=*/false};
      out = graphed(
          *graphs_[static_cast<size_t>(i)],
          [layer, lo](const TensorList& x) { return layer->forward(x, lo); }, in,
          layer->parameters());
    } else {
      // Per-layer gradient boundary: a checkpointed layer hands back ONE gradient per
      // input (e.g. the text context used by both k and v), summed inside the layer. The
      // alias node makes a plain layer sum its uses the same way before they meet other
      // layers' gradients, so float addition associates identically: bitwise equal.
      for (size_t k = kVideo; k <= kActionContext; ++k) in[k] = in[k].alias();
      out = layer->forward(in, {opt.backend, /*checkpoint_attention=*/opt.mixed_attn_ckpt});
    }
    x_v = out[0];
    x_a = out[1];
  }

  auto hv = (head_mod_v + e_v.unsqueeze(1)).chunk(2, /*dim=*/1);
  auto ha = (head_mod_a + e_a.unsqueeze(1)).chunk(2, /*dim=*/1);
  auto out_v = head_v(sg::kernels::adaln_modulate(x_v, hv[0], hv[1], /*eps=*/1e-6));
  auto out_a = head_a(sg::kernels::adaln_modulate(x_a, ha[0], ha[1], /*eps=*/1e-6));
  return {unpatchify(out_v), out_a};
}

}  // namespace sg::trainer
