// In-process model tests: analytic parameter counts match the built modules, chunked
// and whole-clip VAE encodes agree (float64), checkpointed layers give bitwise the same
// gradients, the joint mask has the documented shape.
#include "trainer/model/checkpoint.hpp"
#include "trainer/workload/wam/text_encoder.hpp"
#include "trainer/workload/wam/vae_encoder.hpp"
#include "trainer/workload/wam/wam_model.hpp"

#include "tensor_counts.hpp"

#include <gtest/gtest.h>

namespace sg::trainer {
namespace {

using testing::numel_of;

TEST(WamModel, AnalyticCountsMatchBuiltModules) {
  for (const char* size : {"tiny", "small"}) {
    const auto& c = wam_config(size);
    WamModel model(c, ModelOptions{});
    TextEncoder text(c);
    VaeEncoder vae(c);
    EXPECT_EQ(numel_of(model->parameters()), trainable_params(c)) << size;
    EXPECT_EQ(numel_of(text->parameters()), text_encoder_params(c)) << size;
    EXPECT_EQ(numel_of(vae->parameters()), vae_params(c)) << size;
  }
}

TEST(WamModel, BaseSizeMatchesDesignTable) {
  const auto& c = wam_config("base");
  EXPECT_EQ(c.video_tokens(), 1280);
  EXPECT_EQ(c.latent_frames(), 5);
  EXPECT_EQ(c.latent_height(), 32);
  const double p = static_cast<double>(trainable_params(c));
  EXPECT_NEAR(p / 1e9, 0.91, 0.01);
  const auto& w = wam_config("wam5b");
  EXPECT_EQ(w.video_tokens(), 3510);
  EXPECT_NEAR(static_cast<double>(text_encoder_params(w)) / 1e9, 5.7, 0.1);
}

// A tiny VAE in float64 and a random clip in [-1, 1], from `seed`.
std::pair<VaeEncoder, at::Tensor> float64_vae_and_clip(uint64_t seed) {
  torch::manual_seed(seed);
  const auto& c = wam_config("tiny");
  VaeEncoder vae(c);
  vae->to(torch::kDouble);
  auto video = torch::rand({2, 3, c.frames, c.height, c.width}, torch::kDouble) * 2 - 1;
  return {vae, video};
}

TEST(VaeEncoder, ChunkedEqualsFullClipInFloat64) {
  const auto& c = wam_config("tiny");
  auto [vae, video] = float64_vae_and_clip(3);
  torch::NoGradGuard no_grad;
  auto chunked = vae->encode(video, {/*fullclip=*/false, false});
  auto full = vae->encode(video, {/*fullclip=*/true, false});
  ASSERT_EQ(chunked.sizes(), full.sizes());
  EXPECT_EQ(chunked.size(2), c.latent_frames());
  EXPECT_LT((chunked - full).abs().max().item<double>(), 1e-10);
  // Causality: changing the last frame leaves the first latent frame unchanged.
  auto edited = video.clone();
  edited.select(2, c.frames - 1).fill_(0.5);
  auto z2 = vae->encode(edited, {false, false});
  EXPECT_TRUE(torch::equal(z2.select(2, 0), chunked.select(2, 0)));
  EXPECT_FALSE(
      torch::equal(z2.select(2, c.latent_frames() - 1), chunked.select(2, c.latent_frames() - 1)));
}

// The two ways a causal conv gets its input, cat + layout copy or the previous layer's SiLU
// writing after the context in place, compute the same values, chunk by chunk (context
// carried) and over the whole clip, in either layout. Here within rounding (ATen's CPU SiLU
// takes a scalar or a vector path by position); on CUDA bitwise (tests/gpu/vae_gpu_test.cpp).
TEST(VaeEncoder, ContextInPlaceComputesWhatTheCatComputes) {
  auto [vae, video] = float64_vae_and_clip(5);
  torch::NoGradGuard no_grad;
  for (bool fullclip : {false, true}) {
    for (bool channels_last : {false, true}) {
      auto by_cat = vae->encode(video, {fullclip, channels_last, /*context_in_place=*/false});
      auto in_place = vae->encode(video, {fullclip, channels_last, /*context_in_place=*/true});
      ASSERT_EQ(by_cat.sizes(), in_place.sizes());
      EXPECT_TRUE(in_place.is_contiguous());
      EXPECT_LT((by_cat - in_place).abs().max().item<double>(), 1e-12)
          << "fullclip " << fullclip << " channels_last " << channels_last;
    }
  }
  // The CPU default is the cat path: the same bits as asking for it.
  EXPECT_TRUE(
      torch::equal(vae->encode(video, {true, false}), vae->encode(video, {true, false, false})));
}

std::vector<at::Tensor> grads_with(int64_t ckpt_layers, bool mixed) {
  torch::manual_seed(7);
  const auto& c = wam_config("tiny");
  ModelOptions o;
  o.ckpt_layers = ckpt_layers;
  o.mixed_attn_ckpt = mixed;
  WamModel model(c, o);
  torch::manual_seed(8);
  auto x =
      torch::randn({2, c.latent_channels, c.latent_frames(), c.latent_height(), c.latent_width()});
  auto a = torch::randn({2, c.action_tokens, c.action_features});
  auto t = torch::rand({2});
  auto ctx = torch::randn({2, c.text_len, c.text_dim});
  auto mask = torch::ones({2, c.text_len}, torch::kBool);
  mask.narrow(1, 10, c.text_len - 10).fill_(false);
  auto pred = model->forward(x, a, t, ctx, mask, /*context_all_visible=*/false);
  (pred.video.square().mean() + pred.action.square().mean()).backward();
  std::vector<at::Tensor> grads;
  for (const auto& p : model->parameters()) grads.push_back(p.grad().clone());
  return grads;
}

TEST(Checkpoint, RecomputeGivesBitwiseEqualGradients) {
  const auto none = grads_with(0, false);
  for (auto [k, mixed] :
       std::vector<std::pair<int64_t, bool>>{{-1, false}, {1, false}, {0, true}}) {
    const auto other = grads_with(k, mixed);
    ASSERT_EQ(none.size(), other.size());
    for (size_t i = 0; i < none.size(); ++i) {
      EXPECT_TRUE(torch::equal(none[i], other[i]))
          << "param " << i << " ckpt_layers=" << k << " mixed=" << mixed;
    }
  }
}

TEST(Checkpoint, RecomputesInBackward) {
  int calls = 0;
  auto w = torch::randn({4, 4}, torch::requires_grad());
  auto x = torch::randn({3, 4}, torch::requires_grad());
  auto body = [&](const TensorList& in) -> TensorList {
    ++calls;
    return {torch::tanh(in[0].matmul(w))};
  };
  auto out = checkpointed(body, {x}, {w});
  EXPECT_EQ(calls, 1);
  out[0].sum().backward();
  EXPECT_EQ(calls, 2);
  auto ref_w = w.detach().clone().requires_grad_(true);
  auto ref_x = x.detach().clone().requires_grad_(true);
  torch::tanh(ref_x.matmul(ref_w)).sum().backward();
  EXPECT_TRUE(torch::equal(ref_w.grad(), w.grad()));
  EXPECT_TRUE(torch::equal(ref_x.grad(), x.grad()));
}

// An absent optional input (undefined tensor, e.g. an all-visible mask passed as none)
// reaches the body in its slot, and the gradients of the others are those of the eager body.
TEST(Checkpoint, UndefinedInputsKeepTheirSlots) {
  auto w = torch::randn({4, 4}, torch::requires_grad());
  auto x = torch::randn({3, 4}, torch::requires_grad());
  auto body = [&](const TensorList& in) -> TensorList {
    EXPECT_EQ(in.size(), 3u);
    EXPECT_FALSE(in[1].defined());
    return {torch::tanh(in[0].matmul(w)) * in[2]};
  };
  auto scale = torch::full({1}, 0.5);
  auto out = checkpointed(body, {x, at::Tensor(), scale}, {w});
  out[0].sum().backward();
  auto ref_w = w.detach().clone().requires_grad_(true);
  auto ref_x = x.detach().clone().requires_grad_(true);
  (torch::tanh(ref_x.matmul(ref_w)) * scale).sum().backward();
  EXPECT_TRUE(torch::equal(ref_w.grad(), w.grad()));
  EXPECT_TRUE(torch::equal(ref_x.grad(), x.grad()));
}

TEST(WamModel, JointMaskActionsSeeVideoVideoFirstFrameCausal) {
  const auto& c = wam_config("tiny");
  auto m = build_joint_mask(c, torch::kCPU);
  const int64_t tv = c.video_tokens(), per_frame = c.grid_h() * c.grid_w();
  EXPECT_TRUE(m[tv][0].item<bool>());          // action sees video
  EXPECT_TRUE(m[tv][tv].item<bool>());         // action sees action
  EXPECT_FALSE(m[0][tv].item<bool>());         // video does not see actions
  EXPECT_FALSE(m[0][per_frame].item<bool>());  // first frame does not see later frames
  EXPECT_TRUE(m[per_frame][0].item<bool>());   // later frames see the first frame
  EXPECT_TRUE(m[per_frame][tv - 1].item<bool>());
}

TEST(TextEncoder, PaddingRowsAreZeroAndRowsIndependentOfBatchMates) {
  torch::manual_seed(1);
  const auto& c = wam_config("tiny");
  TextEncoder enc(c);
  torch::NoGradGuard no_grad;
  auto ids = torch::randint(2, c.text_vocab, {2, c.text_len}, torch::kLong);
  auto mask = torch::ones({2, c.text_len}, torch::kBool);
  mask[0].narrow(0, 5, c.text_len - 5).fill_(false);
  auto out = enc->forward(ids, mask);
  EXPECT_EQ(out[0].narrow(0, 5, c.text_len - 5).abs().max().item<float>(), 0.0f);
  auto ids2 = ids.clone();
  ids2[1].fill_(7);
  auto out2 = enc->forward(ids2, mask);
  EXPECT_TRUE(torch::equal(out[0], out2[0]));
}

}  // namespace
}  // namespace sg::trainer
