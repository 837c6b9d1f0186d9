// Frozen T5-style text encoder (umT5-like): token embedding, pre-RMSNorm self-attention
// with a per-layer relative position bias and key padding mask, gated-GELU feed-forward,
// final RMSNorm. Outputs at padding positions are zeroed: those rows are what the text
// cache stores.
#pragma once

#include "trainer/model/device_modules.hpp"
#include "trainer/model/layers.hpp"
#include "trainer/workload/wam/wam_config.hpp"

#include <torch/torch.h>

namespace sg::trainer {

struct T5LayerImpl : torch::nn::Module {
  T5LayerImpl(int64_t dim, int64_t heads, int64_t ffn);
  at::Tensor forward(const at::Tensor& x, const at::Tensor& key_mask, const at::Tensor& buckets);
  int64_t heads;
  RMSNorm norm1{nullptr}, norm2{nullptr};
  Linear q{nullptr}, k{nullptr}, v{nullptr}, o{nullptr};
  Embedding rel_bias{nullptr};
  Linear wi0{nullptr}, wi1{nullptr}, wo{nullptr};
};
TORCH_MODULE(T5Layer);

struct TextEncoderImpl : torch::nn::Module {
  explicit TextEncoderImpl(const WamConfig& c);
  // ids [B, L] int64, mask [B, L] bool (true = token). Returns [B, L, text_dim].
  at::Tensor forward(const at::Tensor& ids, const at::Tensor& mask);
  Embedding embed{nullptr};
  torch::nn::ModuleList layers{nullptr};
  RMSNorm final_norm{nullptr};
};
TORCH_MODULE(TextEncoder);

// T5's bidirectional relative position buckets for a length-L sequence: [L, L] int64.
at::Tensor relative_position_buckets(int64_t length, int64_t num_buckets, int64_t max_distance,
                                     c10::Device device);

}  // namespace sg::trainer
