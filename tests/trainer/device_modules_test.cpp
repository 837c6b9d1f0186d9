// The device-initialised modules (trainer/model/device_modules.hpp) against LibTorch's own
// torch::nn modules under the same seed: same parameter names, bitwise the same values,
// the same generator state afterwards, the same forward and gradients. And the parameter device
// scope (trainer/model/init_device.hpp), exercised on the meta device.
#include "trainer/model/device_modules.hpp"
#include "trainer/model/init_device.hpp"
#include "trainer/workload/wam/wam_model.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sg::trainer {
namespace {

constexpr uint64_t kSeed = 1234;

// Output on `input`, then the gradients of a random projection of it w.r.t. every parameter.
template <typename Holder>
std::vector<at::Tensor> outputs_and_grads(Holder& m, const at::Tensor& input) {
  const auto y = m->forward(input);
  torch::manual_seed(kSeed + 1);
  std::vector<at::Tensor> out{y.detach()};
  if (m->parameters().empty()) return out;
  (y * torch::randn(y.sizes())).sum().backward();
  for (const auto& p : m->parameters()) out.push_back(p.grad());
  return out;
}

// Builds Ours(options) and Theirs(options) from the same seed and compares their
// parameters, the generator's next draw, their outputs on `input` and their gradients.
template <typename Ours, typename Theirs, typename Options>
void expect_same(const Options& options, const at::Tensor& input, const std::string& label) {
  torch::manual_seed(kSeed);
  Ours a(options);
  const auto next_a = torch::rand({4});
  torch::manual_seed(kSeed);
  Theirs b(options);
  const auto next_b = torch::rand({4});
  const auto pa = a->named_parameters(), pb = b->named_parameters();
  ASSERT_EQ(pa.keys(), pb.keys()) << label;
  for (const auto& item : pb) {
    const auto& mine = pa[item.key()];
    EXPECT_EQ(mine.scalar_type(), item.value().scalar_type()) << label << " " << item.key();
    EXPECT_EQ(mine.requires_grad(), item.value().requires_grad()) << label << " " << item.key();
    EXPECT_TRUE(torch::equal(mine, item.value())) << label << " " << item.key();
  }
  EXPECT_TRUE(torch::equal(next_a, next_b))
      << label << ": generator state differs after construction";
  const auto ya = outputs_and_grads(a, input), yb = outputs_and_grads(b, input);
  ASSERT_EQ(ya.size(), yb.size()) << label;
  for (size_t i = 0; i < ya.size(); ++i) {
    EXPECT_TRUE(torch::equal(ya[i], yb[i]))
        << label << (i == 0 ? " forward" : " gradient " + std::to_string(i - 1));
  }
}

void expect_same_linear(const torch::nn::LinearOptions& o, const std::string& label) {
  expect_same<Linear, torch::nn::Linear>(o, torch::randn({4, 37, o.in_features()}), label);
}

TEST(DeviceModules, LinearMatchesTorchNn) {
  expect_same_linear(torch::nn::LinearOptions(7, 13), "linear 7x13");
  expect_same_linear(torch::nn::LinearOptions(64, 32), "linear 64x32");
  expect_same_linear(torch::nn::LinearOptions(48, 96).bias(false), "linear 48x96 no bias");
  expect_same_linear(torch::nn::LinearOptions(256, 1536), "linear 256x1536");
  // The holder's two-integer constructor is LinearOptions(in, out).
  torch::manual_seed(kSeed);
  Linear two_ints(11, 6);
  torch::manual_seed(kSeed);
  torch::nn::Linear reference(11, 6);
  EXPECT_TRUE(torch::equal(two_ints->weight, reference->weight));
  EXPECT_TRUE(torch::equal(two_ints->bias, reference->bias));
}

// Three projections of one input through softmax attention plus a residual (the shape of
// the backbone's attention blocks): the input's gradient sums four contributions, in an
// order set by the autograd graph of the linear op. at::linear's graph (addmm on the
// flattened input) sums them in another order than torch::nn's matmul + add, so only the
// same forward as torch::nn keeps training bitwise identical.
template <typename Holder>
std::vector<at::Tensor> attention_grads(std::vector<Holder> qkv) {
  torch::manual_seed(kSeed + 2);
  auto x = torch::randn({2, 37, 64}).requires_grad_();
  auto q = qkv[0]->forward(x), k = qkv[1]->forward(x), v = qkv[2]->forward(x);
  auto y = at::matmul(at::softmax(at::matmul(q, k.transpose(1, 2)), -1), v) + x;
  (y * torch::randn(y.sizes())).sum().backward();
  std::vector<at::Tensor> grads{x.grad()};
  for (auto& m : qkv) grads.push_back(m->weight.grad()), grads.push_back(m->bias.grad());
  return grads;
}

TEST(DeviceModules, LinearGradientsAccumulateInTorchNnOrder) {
  torch::manual_seed(kSeed);
  const std::vector<Linear> ours = {Linear(64, 64), Linear(64, 64), Linear(64, 64)};
  torch::manual_seed(kSeed);
  const std::vector<torch::nn::Linear> theirs = {
      torch::nn::Linear(64, 64), torch::nn::Linear(64, 64), torch::nn::Linear(64, 64)};
  const auto a = attention_grads(ours), b = attention_grads(theirs);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << "gradient " << i;
}

TEST(DeviceModules, EmbeddingMatchesTorchNn) {
  for (auto [num, dim] : {std::pair<int64_t, int64_t>{32, 4}, {1000, 24}}) {
    expect_same<Embedding, torch::nn::Embedding>(torch::nn::EmbeddingOptions(num, dim),
                                                 torch::randint(num, {2, 9}),
                                                 "embedding " + std::to_string(num));
  }
  EXPECT_THROW(Embedding(torch::nn::EmbeddingOptions(8, 2).padding_idx(0)), c10::Error);
}

TEST(DeviceModules, Conv3dMatchesTorchNnForTheVaeShapes) {
  const std::vector<torch::nn::Conv3dOptions> shapes = {
      torch::nn::Conv3dOptions(3, 8, 3).stride({1, 2, 2}).padding(
          {0, 1, 1}),                                               // spatial causal conv
      torch::nn::Conv3dOptions(8, 8, {2, 1, 1}).stride({2, 1, 1}),  // temporal downsampling
      torch::nn::Conv3dOptions(8, 4, 1),                            // to the latent channels
      torch::nn::Conv3dOptions(8, 4, 3).padding(1).bias(false),
  };
  for (size_t i = 0; i < shapes.size(); ++i) {
    expect_same<Conv3d, torch::nn::Conv3d>(shapes[i],
                                           torch::randn({2, shapes[i].in_channels(), 6, 8, 8}),
                                           "conv3d #" + std::to_string(i));
  }
  EXPECT_THROW(Conv3d(torch::nn::Conv3dOptions(3, 8, 3).padding(torch::kSame)), c10::Error);
}

TEST(DeviceModules, LayerNormMatchesTorchNn) {
  for (bool affine : {true, false}) {
    const auto o = torch::nn::LayerNormOptions({24}).eps(1e-6).elementwise_affine(affine);
    expect_same<LayerNorm, torch::nn::LayerNorm>(o, torch::randn({3, 5, 24}),
                                                 affine ? "layer norm" : "layer norm, no affine");
  }
}

TEST(ParameterDeviceScope, NestsAndRestores) {
  EXPECT_EQ(parameter_device(), c10::Device(c10::kCPU));
  {
    ParameterDeviceScope meta(c10::Device(c10::kMeta));
    EXPECT_EQ(parameter_device(), c10::Device(c10::kMeta));
    {
      ParameterDeviceScope cpu(c10::Device(c10::kCPU));
      EXPECT_EQ(parameter_options().device(), c10::Device(c10::kCPU));
    }
    EXPECT_EQ(parameter_options().device(), c10::Device(c10::kMeta));
  }
  EXPECT_EQ(parameter_device(), c10::Device(c10::kCPU));
}

// The whole backbone under a scope: every parameter lands on the scope's device (meta
// here: shapes only, no memory), and require_on_device names a module built outside.
TEST(ParameterDeviceScope, WholeBackboneIsBuiltOnTheScopedDevice) {
  const c10::Device meta(c10::kMeta);
  WamModel model{nullptr};
  {
    ParameterDeviceScope on_meta(meta);
    model = WamModel(wam_config("tiny"), ModelOptions{});
  }
  for (const auto& p : model->named_parameters()) EXPECT_TRUE(p.value().is_meta()) << p.key();
  EXPECT_NO_THROW(require_on_device(*model, meta));
  Linear outside(4, 4);
  EXPECT_THROW(require_on_device(*outside, meta), std::logic_error);
}

}  // namespace
}  // namespace sg::trainer
