// The trainable wam backbone: patch/action/time/text embeddings, the MoT layers (each
// optionally checkpointed) and the video/action velocity heads.
#pragma once

#include "trainer/model/graphed_layer.hpp"
#include "trainer/model/layers.hpp"
#include "trainer/workload/wam/mot_layer.hpp"
#include "trainer/workload/wam/wam_config.hpp"

#include <torch/torch.h>

namespace sg::trainer {

struct ModelOptions {
  AttnBackend backend = AttnBackend::kMath;
  int64_t ckpt_layers = -1;      // -1 all, 0 none, k the first k
  bool mixed_attn_ckpt = false;  // checkpoint the attention of layers not checkpointed whole
  bool memoize_tables = false;   // keep the RoPE table and joint mask per device
  bool cuda_graphs = false;      // replay the layers not checkpointed as CUDA graphs
};

struct Prediction {
  at::Tensor video;   // [B, z, F, h, w] velocity
  at::Tensor action;  // [B, Ta, Af] velocity
};

struct WamModelImpl : torch::nn::Module {
  WamModelImpl(const WamConfig& c, ModelOptions opt);
  // x_t [B, z, F, h, w] noisy latents, a_t [B, Ta, Af] noisy actions, t [B] in [0, 1],
  // context [B, L, text_dim], context_mask [B, L] bool; context_all_visible: every entry
  // of context_mask is true (known on the host, so the model never reads the mask back).
  Prediction forward(const at::Tensor& x_t, const at::Tensor& a_t, const at::Tensor& t,
                     const at::Tensor& context, const at::Tensor& context_mask,
                     bool context_all_visible);

  // True when layer i is checkpointed as a whole.
  bool checkpoints_layer(int64_t i) const;

  WamConfig cfg;
  ModelOptions opt;
  Linear patch_embed{nullptr}, action_embed{nullptr};
  Linear text_v1{nullptr}, text_v2{nullptr}, text_a1{nullptr}, text_a2{nullptr};
  TimeEmbedding time_v{nullptr}, time_a{nullptr};
  torch::nn::ModuleList layers{nullptr};
  at::Tensor head_mod_v, head_mod_a;  // [1, 2, d]
  Linear head_v{nullptr}, head_a{nullptr};

 private:
  at::Tensor rope_table(c10::Device device);
  at::Tensor joint_mask(c10::Device device, bool* all_visible);
  at::Tensor patchify(const at::Tensor& x) const;
  at::Tensor unpatchify(const at::Tensor& tokens) const;
  at::Tensor rope_cache_, mask_cache_;
  bool mask_all_visible_ = false;
  std::vector<std::shared_ptr<GraphedLayer>>
      graphs_;  // per layer, created on first use (CUDA_GRAPHS)
};
TORCH_MODULE(WamModel);

// [S, S] attention mask of the joint sequence: action tokens see everything; video
// tokens see all video tokens except that first-frame tokens see only the first frame;
// video tokens do not see action tokens.
// *all_visible (if given): whether every entry is true, computed on the host.
at::Tensor build_joint_mask(const WamConfig& c, c10::Device device, bool* all_visible = nullptr);

}  // namespace sg::trainer
