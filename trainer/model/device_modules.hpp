// Drop-in replacements for torch::nn::Linear, Embedding, Conv3d and LayerNorm that
// create their parameters on parameter_device() (init_device.hpp) and initialise them
// there with the same init calls, in the same order, as LibTorch's reset_parameters().
// Same member names, registration order and forward ops (so the same autograd graph): on
// the CPU they hold bitwise the values torch::nn's modules draw under the same seed and
// train bitwise alike (tests/trainer/device_modules_test.cpp). Only the options this
// trainer uses are supported; any other is refused at construction.
#pragma once

#include <torch/torch.h>

namespace sg::trainer {

// y = x W^T + b. W [out, in] ~ kaiming_uniform(a = sqrt(5)), b ~ U(-1/sqrt(in), 1/sqrt(in)).
struct LinearImpl : torch::nn::Module {
  LinearImpl(int64_t in, int64_t out) : LinearImpl(torch::nn::LinearOptions(in, out)) {}
  explicit LinearImpl(const torch::nn::LinearOptions& options);
  at::Tensor forward(const at::Tensor& input);
  torch::nn::LinearOptions options;
  at::Tensor weight;  // [out, in]
  at::Tensor bias;    // [out]; undefined when options.bias() is false
};
TORCH_MODULE(Linear);

// Lookup table [num_embeddings, embedding_dim] ~ N(0, 1). No padding index, max_norm,
// frequency scaling or sparse gradients.
struct EmbeddingImpl : torch::nn::Module {
  EmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim)
      : EmbeddingImpl(torch::nn::EmbeddingOptions(num_embeddings, embedding_dim)) {}
  explicit EmbeddingImpl(const torch::nn::EmbeddingOptions& options);
  at::Tensor forward(const at::Tensor& indices);
  torch::nn::EmbeddingOptions options;
  at::Tensor weight;
};
TORCH_MODULE(Embedding);

// 3-D convolution with explicit zero padding (no 'same'/'valid', no other padding mode).
// Weight and bias initialised as LibTorch's ConvNd.
struct Conv3dImpl : torch::nn::Module {
  explicit Conv3dImpl(const torch::nn::Conv3dOptions& options);
  at::Tensor forward(const at::Tensor& input);
  torch::nn::Conv3dOptions options;
  at::Tensor weight;  // [out, in / groups, kT, kH, kW]
  at::Tensor bias;    // [out]; undefined when options.bias() is false
};
TORCH_MODULE(Conv3d);

// Layer normalisation over the trailing normalized_shape; affine weight = 1, bias = 0.
struct LayerNormImpl : torch::nn::Module {
  explicit LayerNormImpl(const torch::nn::LayerNormOptions& options);
  at::Tensor forward(const at::Tensor& input);
  torch::nn::LayerNormOptions options;
  at::Tensor weight, bias;  // normalized_shape; undefined without elementwise_affine
};
TORCH_MODULE(LayerNorm);

}  // namespace sg::trainer
