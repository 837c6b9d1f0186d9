// The VAE encoder's causal convs on CUDA: the input each conv gets with its left context
// written in place (the default there: the previous layer's SiLU writes after the context)
// is bitwise the cat + layout copy that the CPU runs, chunked and full-clip, in both layouts,
// under the trainer's bf16 autocast with bf16 weights. Label gpu.
#include "trainer/runtime/autocast.hpp"
#include "trainer/workload/wam/vae_encoder.hpp"
#include "trainer/workload/wam/wam_config.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace sg::trainer {
namespace {

TEST(GpuVae, ContextInPlaceIsBitwiseTheCat) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  torch::manual_seed(11);
  const auto& c = wam_config("small");
  VaeEncoder vae(c);
  vae->to(torch::kCUDA, torch::kBFloat16);
  torch::NoGradGuard no_grad;
  AutocastScope autocast({true, at::kBFloat16});
  // Odd batch and a clip of 1 + 4k frames, as the loader makes them.
  auto video =
      (torch::rand({3, 3, c.frames, c.height, c.width}, torch::kCUDA) * 2 - 1).to(torch::kBFloat16);
  for (bool fullclip : {false, true}) {
    for (bool channels_last : {false, true}) {
      auto by_cat = vae->encode(video, {fullclip, channels_last, /*context_in_place=*/false});
      auto in_place = vae->encode(video, {fullclip, channels_last, /*context_in_place=*/true});
      auto by_default = vae->encode(video, {fullclip, channels_last});
      ASSERT_EQ(by_cat.sizes(), in_place.sizes());
      EXPECT_TRUE(torch::equal(by_cat, in_place))
          << "fullclip " << fullclip << " channels_last " << channels_last;
      EXPECT_TRUE(torch::equal(by_default, in_place)) << "CUDA's default is the in-place path";
    }
  }
}

}  // namespace
}  // namespace sg::trainer
