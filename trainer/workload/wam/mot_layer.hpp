// One mixture-of-transformers layer: a video block and an action block with separate
// weights that share ONE joint attention over [video; action] tokens (boolean mask),
// 3-D RoPE on the video q/k, AdaLN modulation (shift/scale/gate) from the timestep,
// q/k RMSNorm, gated residuals, cross-attention to text, tanh-GELU MLPs.
#pragma once

#include "trainer/model/checkpoint.hpp"
#include "trainer/model/layers.hpp"
#include "trainer/workload/wam/wam_config.hpp"

#include <torch/torch.h>

namespace sg::trainer {

// Inputs of a layer, in this order (so a layer can be checkpointed as a tensor list).
enum LayerInput : size_t {
  kVideo,          // [B, Tv, dv]
  kAction,         // [B, Ta, da]
  kVideoMod,       // [B, 6, dv] timestep modulation
  kActionMod,      // [B, 6, da]
  kVideoContext,   // [B, L, dv] text context projected for the video block
  kActionContext,  // [B, L, da]
  kContextMask,    // [B, L] bool
  kRopeTable,      // [Tv, hd/2, 2] float64
  kJointMask,      // [S, S] bool, S = Tv + Ta
  kNumLayerInputs
};

struct LayerOptions {
  AttnBackend backend = AttnBackend::kMath;
  bool checkpoint_attention = false;  // checkpoint the joint attention on its own
};

// The q/k/v/o projections of both blocks: the part MIXED_ATTN_CKPT recomputes.
struct JointAttentionImpl : torch::nn::Module {
  explicit JointAttentionImpl(const WamConfig& c);
  // h_v, h_a: modulated inputs. Returns the two output projections.
  std::pair<at::Tensor, at::Tensor> forward(const at::Tensor& h_v, const at::Tensor& h_a,
                                            const at::Tensor& rope, const at::Tensor& mask,
                                            AttnBackend backend);
  int64_t heads, head_dim;
  Linear q_v{nullptr}, k_v{nullptr}, v_v{nullptr}, o_v{nullptr};
  Linear q_a{nullptr}, k_a{nullptr}, v_a{nullptr}, o_a{nullptr};
  RMSNorm norm_q_v{nullptr}, norm_k_v{nullptr}, norm_q_a{nullptr}, norm_k_a{nullptr};
};
TORCH_MODULE(JointAttention);

struct MoTLayerImpl : torch::nn::Module {
  explicit MoTLayerImpl(const WamConfig& c);
  // Returns {video, action} after the layer.
  TensorList forward(const TensorList& in, const LayerOptions& opt);
  at::Tensor modulation_v, modulation_a;  // [1, 6, d]
  JointAttention attn{nullptr};
  CrossAttention cross_v{nullptr}, cross_a{nullptr};
  Mlp mlp_v{nullptr}, mlp_a{nullptr};
};
TORCH_MODULE(MoTLayer);

}  // namespace sg::trainer
