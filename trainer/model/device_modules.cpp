// Device-initialised Linear / Embedding / Conv3d / LayerNorm (see device_modules.hpp).
// Each constructor mirrors LibTorch's reset() + reset_parameters() (torch/csrc/api/src/
// nn/modules/{linear,embedding,normalization}.cpp, torch/nn/modules/conv.h): register
// weight, then bias, then initialise weight, then bias, with the same init functions.
#include "trainer/model/device_modules.hpp"

#include "kernels/adaln/adaln.hpp"
#include "trainer/model/init_device.hpp"
#include "trainer/test_mutants.hpp"

#include <cmath>
#include <variant>
#include <vector>

namespace sg::trainer {
namespace {

// kaiming_uniform_(a = sqrt(5)) on the weight, then U(-1/sqrt(fan_in), 1/sqrt(fan_in))
// on the bias when there is one: LinearImpl's and ConvNdImpl's reset_parameters().
void reset_kaiming(at::Tensor& weight, at::Tensor& bias) {
  torch::nn::init::kaiming_uniform_(weight, /*a=*/std::sqrt(5));
  if (bias.defined()) {
    const auto fans = torch::nn::init::_calculate_fan_in_and_fan_out(weight);
    const double bound = 1 / std::sqrt(std::get<0>(fans));
    torch::nn::init::uniform_(bias, -bound, bound);
  }
}

}  // namespace

LinearImpl::LinearImpl(const torch::nn::LinearOptions& options_) : options(options_) {
  weight = register_parameter(
      "weight", torch::empty({options.out_features(), options.in_features()}, parameter_options()));
  if (options.bias()) {
    bias = register_parameter("bias", torch::empty({options.out_features()}, parameter_options()));
  } else {
    bias = register_parameter("bias", {}, /*requires_grad=*/false);
  }
  reset_kaiming(weight, bias);
}

// torch::nn's functional, not at::linear: for a 3-D input at::linear runs one addmm on
// the flattened input where F::linear runs matmul + add, a different autograd graph that
// sums the gradients of a shared input in another order (not bitwise the same training).
// F::linear's matmul + add branch is spelled out so that its `output += bias` goes through
// the ADALN family's bias op: that same in-place add unless FUSED_ADALN runs the kernel.
at::Tensor LinearImpl::forward(const at::Tensor& input) {
  if (input.dim() == 2 || !bias.defined())
    return torch::nn::functional::linear(input, weight, bias);
  if (test_mutants().changes_linear()) return test_mutants().linear(input, weight, bias);
  return sg::kernels::bias_add(input.matmul(weight.t()), bias);
}

EmbeddingImpl::EmbeddingImpl(const torch::nn::EmbeddingOptions& options_) : options(options_) {
  TORCH_CHECK(!options.padding_idx() && !options.max_norm() && !options.scale_grad_by_freq() &&
                  !options.sparse() && !options._weight().defined(),
              "sg::trainer::Embedding supports only num_embeddings and embedding_dim");
  weight = register_parameter(
      "weight",
      torch::empty({options.num_embeddings(), options.embedding_dim()}, parameter_options()));
  torch::nn::init::normal_(weight);
}

at::Tensor EmbeddingImpl::forward(const at::Tensor& indices) {
  return at::embedding(weight, indices, /*padding_idx=*/-1, /*scale_grad_by_freq=*/false,
                       /*sparse=*/false);
}

Conv3dImpl::Conv3dImpl(const torch::nn::Conv3dOptions& options_) : options(options_) {
  using std::get_if;  // with ADL: std::get_if (LibTorch 2.x) or c10::get_if (1.13 variants)
  TORCH_CHECK(get_if<torch::ExpandingArray<3>>(&options.padding()) != nullptr &&
                  get_if<torch::enumtype::kZeros>(&options.padding_mode()) != nullptr,
              "sg::trainer::Conv3d supports only explicit zero padding");
  TORCH_CHECK(options.in_channels() % options.groups() == 0 &&
                  options.out_channels() % options.groups() == 0,
              "in_channels and out_channels must be divisible by groups");
  std::vector<int64_t> sizes = {options.out_channels(), options.in_channels() / options.groups()};
  sizes.insert(sizes.end(), options.kernel_size()->begin(), options.kernel_size()->end());
  weight = register_parameter("weight", torch::empty(sizes, parameter_options()));
  if (options.bias()) {
    bias = register_parameter("bias", torch::empty({options.out_channels()}, parameter_options()));
  } else {
    register_parameter("bias", {}, /*requires_grad=*/false);
  }
  reset_kaiming(weight, bias);
}

at::Tensor Conv3dImpl::forward(const at::Tensor& input) {
  using std::get_if;
  const auto& padding = *get_if<torch::ExpandingArray<3>>(&options.padding());
  return at::conv3d(input, weight, bias, *options.stride(), *padding, *options.dilation(),
                    options.groups());
}

LayerNormImpl::LayerNormImpl(const torch::nn::LayerNormOptions& options_) : options(options_) {
  if (options.elementwise_affine()) {
    weight =
        register_parameter("weight", torch::empty(options.normalized_shape(), parameter_options()));
    bias =
        register_parameter("bias", torch::empty(options.normalized_shape(), parameter_options()));
    torch::nn::init::ones_(weight);
    torch::nn::init::zeros_(bias);
  } else {
    weight = register_parameter("weight", {}, /*requires_grad=*/false);
    bias = register_parameter("bias", {}, /*requires_grad=*/false);
  }
}

at::Tensor LayerNormImpl::forward(const at::Tensor& input) {
  return at::layer_norm(input, options.normalized_shape(), weight, bias, options.eps());
}

}  // namespace sg::trainer
