// Building blocks of the wam backbone: RMSNorm, tanh-GELU MLP, masked multi-head
// attention (math or an SDPA backend), cross-attention to text, timestep embedding.
#pragma once

#include "trainer/model/device_modules.hpp"

#include <torch/torch.h>

#include <string>

namespace sg::trainer {

// Attention implementation: kMath is the explicit matmul/softmax (every build); the
// others call scaled_dot_product_attention restricted to one kernel (CUDA, LibTorch 2.x).
enum class AttnBackend { kMath, kEfficient, kFlash, kCudnn };
AttnBackend parse_attn_backend(const std::string& name);

// RMSNorm over the last dim, computed in float32 and cast back (Wan's WanRMSNorm).
struct RMSNormImpl : torch::nn::Module {
  explicit RMSNormImpl(int64_t dim, double eps = 1e-6);
  at::Tensor forward(const at::Tensor& x);
  at::Tensor weight;
  double eps;
};
TORCH_MODULE(RMSNorm);

// fc2(gelu_tanh(fc1(x))).
struct MlpImpl : torch::nn::Module {
  MlpImpl(int64_t dim, int64_t hidden);
  at::Tensor forward(const at::Tensor& x);
  Linear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(Mlp);

// softmax(q k^T / sqrt(d) masked) v. q [B, Sq, H, D], k/v [B, Sk, H, D]; mask is bool,
// broadcastable to [B, H, Sq, Sk], true = may attend; undefined = no mask (everything
// visible). Returns [B, Sq, H * D].
at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     const at::Tensor& mask, AttnBackend backend);

// One attention's projections, registered on a module in this order with a suffix on their
// names: q, k, v (in -> attn), o (attn -> in), norm_q, norm_k (RMSNorm over attn).
struct AttentionProjections {
  Linear &q, &k, &v, &o;
  RMSNorm &norm_q, &norm_k;
};
void register_attention_projections(torch::nn::Module& m, const std::string& suffix, int64_t in,
                                    int64_t attn, const AttentionProjections& p);

// Cross-attention of x to a text context with a key padding mask [B, L] (bool; undefined:
// every position visible).
struct CrossAttentionImpl : torch::nn::Module {
  CrossAttentionImpl(int64_t dim, int64_t heads);
  at::Tensor forward(const at::Tensor& x, const at::Tensor& context, const at::Tensor& context_mask,
                     AttnBackend backend);
  int64_t heads;
  LayerNorm norm{nullptr};
  Linear q{nullptr}, k{nullptr}, v{nullptr}, o{nullptr};
  RMSNorm norm_q{nullptr}, norm_k{nullptr};
};
TORCH_MODULE(CrossAttention);

// Sinusoidal embedding of timesteps t in [0, 1] (scaled by 1000), computed in float64.
at::Tensor timestep_embedding(const at::Tensor& t, int64_t dim);

// linear -> SiLU -> linear, then SiLU -> linear to 6 modulation vectors (Wan's
// time_embedding + time_projection). Returns (e [B, dim], e0 [B, 6, dim]).
struct TimeEmbeddingImpl : torch::nn::Module {
  TimeEmbeddingImpl(int64_t freq_dim, int64_t dim);
  std::pair<at::Tensor, at::Tensor> forward(const at::Tensor& t);
  int64_t freq_dim, dim;
  Linear fc1{nullptr}, fc2{nullptr}, proj{nullptr};
};
TORCH_MODULE(TimeEmbedding);

}  // namespace sg::trainer
