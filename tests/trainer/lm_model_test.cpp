// In-process tests of the lm model: analytic parameter counts (lm and lm_osft) match the
// built modules, attention never crosses a document inside a packed row (and a plain
// causal mask would), checkpointed blocks give bitwise the same gradients, and the OSFT
// factorisation rebuilds W at init with gradients only on its low part.
#include "trainer/workload/lm/lm_model.hpp"
#include "trainer/workload/lm/osft_linear.hpp"
#include "trainer/workload/lm/tokenizer.hpp"

#include "tensor_counts.hpp"

#include <gtest/gtest.h>

namespace sg::trainer {
namespace {

using testing::numel_of;

TEST(LmModel, AnalyticCountsMatchBuiltModules) {
  for (const char* size : {"tiny", "small"}) {
    for (bool osft : {false, true}) {
      const auto& c = lm_config(size);
      torch::manual_seed(1);
      LmModelOptions o;
      o.osft = osft;
      LmModel model(c, o);
      EXPECT_EQ(numel_of(model->parameters()), lm_trainable_params(c, osft))
          << size << " osft " << osft;
      EXPECT_EQ(numel_of(model->buffers()), lm_frozen_params(c, osft)) << size << " osft " << osft;
    }
  }
}

TEST(LmModel, LargeSizesAreLlamaLike) {
  EXPECT_NEAR(static_cast<double>(lm_trainable_params(lm_config("1b"), false)) / 1e9, 1.04, 0.02);
  EXPECT_NEAR(static_cast<double>(lm_trainable_params(lm_config("3b"), false)) / 1e9, 2.92, 0.05);
  for (const auto& name : lm_size_names()) {
    const auto& c = lm_config(name);
    EXPECT_EQ(c.heads % c.kv_heads, 0) << name;
    EXPECT_LT(c.kv_heads, c.heads) << name << ": grouped-query attention";
    EXPECT_EQ(c.seq_len % 8, 0) << name;
  }
}

// Logits of row [doc A | doc B] at doc B's positions vs those of a row where doc A is
// replaced by other tokens: equal when attention is block-diagonal.
TEST(LmModel, AttentionDoesNotCrossDocuments) {
  const auto& c = lm_config("tiny");
  torch::manual_seed(2);
  LmModel model(c, LmModelOptions{});
  torch::NoGradGuard no_grad;
  auto a = at::randint(kFirstWordId, c.vocab, {1, 12}, at::kLong);
  auto a2 = at::randint(kFirstWordId, c.vocab, {1, 12}, at::kLong);
  auto b = at::randint(kFirstWordId, c.vocab, {1, 10}, at::kLong);
  const at::Tensor doc_a = at::zeros({1, 12}, at::kLong), doc_b = at::ones({1, 10}, at::kLong);
  const at::Tensor docs = at::cat(std::vector<at::Tensor>{doc_a, doc_b}, 1);
  const at::Tensor row = at::cat(std::vector<at::Tensor>{a, b}, 1);
  const at::Tensor row2 = at::cat(std::vector<at::Tensor>{a2, b}, 1);
  auto tail = [](const at::Tensor& logits) { return logits.narrow(1, 12, 10); };
  const auto l1 = tail(model->forward(row, docs)), l2 = tail(model->forward(row2, docs));
  EXPECT_LT((l1 - l2).abs().max().item<double>(), 1e-6);
  // Doc B alone at positions 0..9: same logits up to RoPE rounding (RoPE is relative).
  const auto alone = model->forward(b, at::zeros({1, 10}, at::kLong));
  EXPECT_LT((l1 - alone).abs().max().item<double>(), 1e-4);
  // Control: one document id for the whole row (plain causal) lets B see A.
  const auto all_one = at::zeros({1, 22}, at::kLong);
  const auto c1 = tail(model->forward(row, all_one)), c2 = tail(model->forward(row2, all_one));
  EXPECT_GT((c1 - c2).abs().max().item<double>(), 1e-3);
}

TEST(LmModel, DocumentCausalMaskShape) {
  auto docs = at::tensor(std::vector<int64_t>{0, 0, 1, -1}).view({1, 4});
  auto m = document_causal_mask(docs);
  ASSERT_EQ(m.sizes(), (std::vector<int64_t>{1, 1, 4, 4}));
  auto expect = at::tensor(std::vector<int64_t>{1, 0, 0, 0,  //
                                                1, 1, 0, 0,  //
                                                0, 0, 1, 0,  //
                                                0, 0, 0, 1})
                    .to(at::kBool)
                    .view({1, 1, 4, 4});
  EXPECT_TRUE(at::equal(m, expect));
}

std::vector<at::Tensor> grads_with(int64_t ckpt_layers) {
  const auto& c = lm_config("tiny");
  torch::manual_seed(4);
  LmModelOptions o;
  o.ckpt_layers = ckpt_layers;
  LmModel model(c, o);
  PackedRow row;
  for (int64_t i = 0; i < 40; ++i)
    row.tokens.push_back(kFirstWordId + (i * 37) % 400), row.doc.push_back(i / 20);
  model->loss_sum(collate({row, row}, false)).backward();
  std::vector<at::Tensor> out;
  for (const auto& p : model->parameters()) out.push_back(p.grad().clone());
  return out;
}

TEST(LmModel, CheckpointedBlocksGiveBitwiseGradients) {
  const auto all = grads_with(-1), none = grads_with(0), first = grads_with(1);
  ASSERT_EQ(all.size(), none.size());
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_TRUE(at::equal(all[i], none[i])) << i;
    EXPECT_TRUE(at::equal(all[i], first[i])) << i;
  }
}

TEST(OsftLinear, FactorsRebuildTheInitialWeight) {
  torch::manual_seed(5);
  LmLinear plain(48, 80, /*osft=*/false);
  torch::manual_seed(5);
  LmLinear osft(48, 80, /*osft=*/true);
  const int64_t low = osft_low_rank(48, 80);
  EXPECT_EQ(low, 12);
  EXPECT_EQ(osft->u_low.sizes(), (std::vector<int64_t>{80, low}));
  EXPECT_EQ(osft->v_high.sizes(), (std::vector<int64_t>{48, 48 - low}));
  const auto w = osft->effective_weight();
  EXPECT_LT((w - plain->weight).abs().max().item<double>(), 1e-6);
  // Low part = the smallest singular values.
  EXPECT_LE(osft->s_low.max().item<float>(), osft->s_high.min().item<float>());
}

TEST(OsftLinear, OnlyTheLowPartIsTrained) {
  const auto& c = lm_config("tiny");
  torch::manual_seed(6);
  LmModelOptions o;
  o.osft = true;
  LmModel model(c, o);
  for (const auto& item : model->named_parameters()) {
    EXPECT_EQ(item.key().find("_high"), std::string::npos) << item.key();
  }
  for (const auto& b : model->buffers()) EXPECT_FALSE(b.requires_grad());
  PackedRow row;
  for (int64_t i = 0; i < 20; ++i) row.tokens.push_back(kFirstWordId + i), row.doc.push_back(0);
  model->loss_sum(collate({row}, false)).backward();
  auto block = model->blocks->ptr<LmBlockImpl>(0);
  EXPECT_TRUE(block->q->u_low.grad().defined());
  EXPECT_GT(block->q->s_low.grad().abs().sum().item<float>(), 0.0f);
  EXPECT_FALSE(block->q->u_high.grad().defined());
}

}  // namespace
}  // namespace sg::trainer
