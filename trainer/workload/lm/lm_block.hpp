// One decoder block of the lm workload: pre-norm grouped-query self-attention with 1-D
// RoPE under a block-diagonal causal mask, then a pre-norm SwiGLU MLP, each added to the
// residual stream (Llama's block).
#pragma once

#include "trainer/model/layers.hpp"
#include "trainer/workload/lm/lm_config.hpp"
#include "trainer/workload/lm/osft_linear.hpp"

#include <torch/torch.h>

namespace sg::trainer {

// 1-D RoPE angle table for positions 0..len-1, float64 [len, head_dim/2, 2] of (cos, sin),
// pairs (x[2j], x[2j+1]) rotated by p·theta^(-2j/head_dim): the layout the ROPE kernel
// family reads (kernels/rope/rope.hpp), so FUSED_ROPE applies unchanged.
at::Tensor rope1d_table(int64_t len, int64_t head_dim, double theta, c10::Device device);

// [B, 1, L, L] bool, true = may attend: key j <= query i and both in the same document
// (doc ids from LmBatch; padding has id -1 and attends only to padding).
at::Tensor document_causal_mask(const at::Tensor& doc_ids);

struct LmBlockImpl : torch::nn::Module {
  LmBlockImpl(const LmConfig& c, bool osft);
  // x [B, L, dim], rope table [L, head_dim/2, 2], mask [B, 1, L, L].
  at::Tensor forward(const at::Tensor& x, const at::Tensor& rope, const at::Tensor& mask,
                     AttnBackend backend);

  int64_t heads, kv_heads, head_dim;
  RMSNorm attn_norm{nullptr}, mlp_norm{nullptr};
  LmLinear q{nullptr}, k{nullptr}, v{nullptr}, o{nullptr};
  LmLinear gate{nullptr}, up{nullptr}, down{nullptr};
};
TORCH_MODULE(LmBlock);

}  // namespace sg::trainer
