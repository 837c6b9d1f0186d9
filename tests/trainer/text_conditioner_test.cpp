// Text conditioning paths against the plain encoder: cache (bitwise, including hits),
// fast miss path on a shorter prefix (close), truncation (drops only padding), offload
// (bitwise, loads only on a miss).
#include "trainer/workload/wam/text/text_conditioner.hpp"
#include "trainer/workload/wam/data/synthetic_clips.hpp"

#include <gtest/gtest.h>

namespace sg::trainer {
namespace {

struct Tokens {
  at::Tensor ids, mask;
};

Tokens tokens(const WamConfig& c, const std::vector<int>& prompts) {
  SyntheticClips d(c, 0);
  const int64_t b = static_cast<int64_t>(prompts.size());
  Tokens t{torch::zeros({b, c.text_len}, torch::kLong),
           torch::zeros({b, c.text_len}, torch::kBool)};
  for (int64_t i = 0; i < b; ++i) {
    d.tokenize(SyntheticClips::prompt(prompts[static_cast<size_t>(i)]),
               t.ids[i].data_ptr<int64_t>(), t.mask[i].data_ptr<bool>());
  }
  return t;
}

TextEncoder encoder(const WamConfig& c) {
  torch::manual_seed(11);
  TextEncoder e(c);
  for (auto& p : e->parameters()) p.requires_grad_(false);
  return e;
}

TEST(TextConditioner, CacheAndOffloadAreBitwiseTheEncoder) {
  const auto& c = wam_config("small");
  Switches plain_sw, cache_sw;
  cache_sw.text_cache = true;
  cache_sw.text_encoder_offload = true;
  TextConditioner plain(encoder(c), plain_sw, torch::kCPU);
  TextConditioner cached(encoder(c), cache_sw, torch::kCPU);
  const auto first = tokens(c, {1, 2, 3, 1});
  const auto second = tokens(c, {3, 2, 1, 2});  // all cached now
  EXPECT_TRUE(torch::equal(plain.encode(first.ids, first.mask).rows,
                           cached.encode(first.ids, first.mask).rows));
  EXPECT_EQ(cached.offload()->loads, 1);
  EXPECT_TRUE(torch::equal(plain.encode(second.ids, second.mask).rows,
                           cached.encode(second.ids, second.mask).rows));
  EXPECT_EQ(cached.offload()->loads, 1);  // all hits: the encoder weights stayed off the device
  EXPECT_EQ(cached.cache()->hits, 4);
}

TEST(TextConditioner, FastMissPathAndTruncationStayClose) {
  const auto& c = wam_config("small");  // 32-token context, prompts of 10 tokens
  Switches plain_sw, fast_sw;
  fast_sw.text_cache = true;
  fast_sw.text_miss_fast = true;
  fast_sw.context_trunc = true;
  TextConditioner plain(encoder(c), plain_sw, torch::kCPU);
  TextConditioner fast(encoder(c), fast_sw, torch::kCPU);
  const auto t = tokens(c, {4, 5, 4, 6});
  const auto a = plain.encode(t.ids, t.mask);
  const auto b = fast.encode(t.ids, t.mask);
  const int64_t kept = t.mask.sum(1).max().item<int64_t>();
  ASSERT_EQ(b.rows.size(1), kept);
  ASSERT_LT(kept, c.text_len);
  EXPECT_TRUE(torch::equal(a.mask.narrow(1, 0, kept), b.mask));
  EXPECT_TRUE(torch::allclose(a.rows.narrow(1, 0, kept), b.rows, 1e-5, 1e-5));
  EXPECT_EQ(a.rows.narrow(1, kept, c.text_len - kept).abs().max().item<float>(), 0.0f);
  EXPECT_EQ(fast.cache()->size(), 3);  // only the distinct prompts were encoded
}

}  // namespace
}  // namespace sg::trainer
