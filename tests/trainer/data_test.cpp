// Synthetic data and loader: deterministic per (seed, index), independent of the worker
// count, ~40 prompts, and the uint8 fast input path bitwise equal to the default path.
#include "trainer/workload/wam/data/clip_loader.hpp"
#include "trainer/workload/wam/data/device_batch.hpp"
#include "trainer/workload/wam/text/text_cache.hpp"

#include <gtest/gtest.h>

#include <set>

namespace sg::trainer {
namespace {

TEST(SyntheticClips, DeterministicAndVaried) {
  const auto& c = wam_config("tiny");
  SyntheticClips a(c, 5), b(c, 5), other(c, 6);
  std::vector<uint8_t> fa(a.frame_bytes()), fb(a.frame_bytes()), fo(a.frame_bytes());
  std::vector<float> aa(c.action_tokens * c.action_features), ab(aa.size()), ao(aa.size());
  a.make(17, fa.data(), aa.data());
  b.make(17, fb.data(), ab.data());
  other.make(17, fo.data(), ao.data());
  EXPECT_EQ(fa, fb);
  EXPECT_EQ(aa, ab);
  EXPECT_NE(fa, fo);
  // Frames move: the first and last frame differ.
  const size_t frame = static_cast<size_t>(c.height * c.width * 3);
  EXPECT_NE(std::vector<uint8_t>(fa.begin(), fa.begin() + frame),
            std::vector<uint8_t>(fa.end() - frame, fa.end()));
}

TEST(SyntheticClips, FortyPromptsDistinctTokens) {
  const auto& c = wam_config("small");
  SyntheticClips d(c, 0);
  std::set<std::vector<int64_t>> tokens;
  std::set<int> ids;
  for (int64_t i = 0; i < 2000; ++i) ids.insert(d.prompt_id(i));
  EXPECT_EQ(ids.size(), static_cast<size_t>(kNumPrompts));
  for (int p = 0; p < kNumPrompts; ++p) {
    std::vector<int64_t> t(c.text_len);
    std::vector<uint8_t> m(c.text_len);
    d.tokenize(SyntheticClips::prompt(p), t.data(), reinterpret_cast<bool*>(m.data()));
    tokens.insert(t);
  }
  EXPECT_EQ(tokens.size(), static_cast<size_t>(kNumPrompts));
}

TEST(ClipLoader, SameBatchesWhateverTheWorkerCount) {
  const auto& c = wam_config("tiny");
  SyntheticClips d(c, 1);
  std::vector<std::vector<at::Tensor>> seen;
  for (int64_t workers : {0, 1, 3}) {
    LoaderOptions lo;
    lo.batch_size = 2;
    lo.workers = workers;
    lo.collate_uint8 = true;
    ClipLoader loader(d, lo);
    std::vector<at::Tensor> batches;
    for (int i = 0; i < 5; ++i) {
      auto b = loader.next();
      EXPECT_EQ(b.index, i);
      batches.push_back(b.clip_u8);
      batches.push_back(b.token_ids);
      batches.push_back(b.actions);
    }
    seen.push_back(batches);
  }
  for (size_t w = 1; w < seen.size(); ++w) {
    for (size_t i = 0; i < seen[0].size(); ++i) EXPECT_TRUE(torch::equal(seen[0][i], seen[w][i]));
  }
}

TEST(DeviceBatch, FastInputIsBitwiseTheDefaultPath) {
  const auto& c = wam_config("tiny");
  SyntheticClips d(c, 2);
  LoaderOptions lo;
  lo.batch_size = 2;
  lo.workers = 0;
  auto list = build_batch(d, lo, 3);
  lo.collate_uint8 = true;
  auto collated = build_batch(d, lo, 3);
  auto a = to_device(list, torch::kCPU, /*fast_input=*/false);
  auto b = to_device(collated, torch::kCPU, /*fast_input=*/true);
  EXPECT_TRUE(torch::equal(a.video, b.video));
  EXPECT_EQ(a.video.sizes(), (std::vector<int64_t>{2, 3, c.frames, c.height, c.width}));
  EXPECT_LE(a.video.max().item<float>(), 1.0f);
  EXPECT_GE(a.video.min().item<float>(), -1.0f);
}

TEST(TextCache, LruEvictsLeastRecentlyUsed) {
  TextCache cache(2);
  auto row = torch::ones({3});
  cache.insert("a", row);
  cache.insert("b", row * 2);
  EXPECT_TRUE(cache.find("a").defined());  // a is now most recent
  cache.insert("c", row * 3);              // evicts b
  EXPECT_FALSE(cache.find("b").defined());
  EXPECT_TRUE(cache.find("a").defined());
  EXPECT_TRUE(cache.find("c").defined());
  EXPECT_EQ(cache.size(), 2);
  EXPECT_EQ(cache.evictions, 1);
}

TEST(TextCache, KeyIncludesMask) {
  auto ids = torch::tensor({5, 6, 1, 0}, torch::kLong);
  auto m1 = torch::tensor({1, 1, 1, 0}, torch::kBool);
  auto m2 = torch::tensor({1, 1, 1, 1}, torch::kBool);
  EXPECT_NE(TextCache::key(ids, m1), TextCache::key(ids, m2));
  EXPECT_EQ(TextCache::key(ids, m1), TextCache::key(ids.clone(), m1.clone()));
}

}  // namespace
}  // namespace sg::trainer
