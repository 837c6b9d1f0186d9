// In-process tests of the lm data path: the corpus (Debian's license texts, sorted, a
// missing directory is a BadInputError), the tokenizer, packed rows that depend only on
// (seed, index), the loss mask that never crosses a document, and PAD_TO_8 padding that
// keeps the real tokens.
#include "trainer/errors.hpp"
#include "trainer/workload/lm/corpus.hpp"
#include "trainer/workload/lm/lm_config.hpp"
#include "trainer/workload/lm/packing.hpp"
#include "trainer/workload/lm/tokenizer.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace sg::trainer {
namespace {

at::Tensor longs(std::vector<int64_t> v) { return at::tensor(v); }
at::Tensor bools(std::vector<int64_t> v) { return at::tensor(v).to(at::kBool); }

const Corpus& tiny_corpus() {
  static const Corpus c = load_corpus(kDefaultCorpusDir, lm_config("tiny").vocab);
  return c;
}

TEST(LmCorpus, ReadsDebianLicenseTextsInSortedOrder) {
  const auto& c = tiny_corpus();
  ASSERT_GE(c.files.size(), 5u);
  EXPECT_TRUE(std::is_sorted(c.files.begin(), c.files.end()));
  EXPECT_NE(std::find(c.files.begin(), c.files.end(), "GPL-3"), c.files.end());
  EXPECT_EQ(std::find(c.files.begin(), c.files.end(), "GPL"), c.files.end())
      << "symbolic links are skipped";
  EXPECT_GT(c.documents.size(), 500u);  // 793 on bookworm
  EXPECT_GT(c.tokens(), 40000);
}

TEST(LmCorpus, MissingDirectoryIsBadInput) {
  try {
    load_corpus("/nonexistent/speedgate-corpus", 512);
    FAIL() << "no error";
  } catch (const BadInputError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/speedgate-corpus"), std::string::npos)
        << e.what();
  }
}

TEST(LmTokenizer, DeterministicIdsInRange) {
  const auto a = tokenize_words("Everyone is permitted to copy, and distribute.", 512);
  const auto b = tokenize_words("Everyone is permitted to copy, and distribute.", 512);
  EXPECT_EQ(a, b);
  ASSERT_EQ(a.size(), 9u);  // 7 words, ',' and '.'
  for (auto id : a) {
    EXPECT_GE(id, kFirstWordId);
    EXPECT_LT(id, 512);
  }
  EXPECT_EQ(a[1], tokenize_words("is", 512)[0]);
}

TEST(LmPacking, RowsDependOnlyOnSeedAndIndex) {
  const auto& cfg = lm_config("tiny");
  PackedRows a(tiny_corpus(), cfg.seq_len, 7), b(tiny_corpus(), cfg.seq_len, 7),
      other(tiny_corpus(), cfg.seq_len, 8);
  for (int64_t i : std::vector<int64_t>{0, 1, 1000, int64_t{1} << 40}) {
    EXPECT_EQ(a.row(i).tokens, b.row(i).tokens) << i;
    EXPECT_LE(a.row(i).tokens.size(), static_cast<size_t>(cfg.seq_len + 1));
  }
  EXPECT_NE(a.row(3).tokens, a.row(4).tokens);
  EXPECT_NE(a.row(3).tokens, other.row(3).tokens);
}

TEST(LmPacking, LossMaskNeverCrossesDocuments) {
  PackedRow row;
  row.tokens = {5, 6, 7, kEosId, 8, 9, kEosId};
  row.doc = {0, 0, 0, 0, 1, 1, 1};
  PackedRow short_row;
  short_row.tokens = {10, 11, kEosId};
  short_row.doc = {0, 0, 0};
  const LmBatch b = collate({row, short_row}, /*pad_to_8=*/false);
  ASSERT_EQ(b.length, 6);
  // Row 0: inputs 5 6 7 EOS 8 9; the target after the first EOS (8) is another document.
  EXPECT_TRUE(at::equal(b.loss_mask[0], bools({1, 1, 1, 0, 1, 1})));
  EXPECT_TRUE(at::equal(b.targets[0], longs({6, 7, kEosId, kPadId, 9, kEosId})));
  EXPECT_TRUE(at::equal(b.doc_ids[0], longs({0, 0, 0, 0, 1, 1})));
  // Row 1: two real targets, then padding (doc -1, not in the loss).
  EXPECT_TRUE(at::equal(b.loss_mask[1], bools({1, 1, 0, 0, 0, 0})));
  EXPECT_TRUE(at::equal(b.doc_ids[1], longs({0, 0, -1, -1, -1, -1})));
  EXPECT_EQ(b.real_tokens, 7);
  EXPECT_EQ(b.loss_mask.sum().item<int64_t>(), b.real_tokens);
}

TEST(LmPacking, PadTo8KeepsTheRealTokens) {
  const auto& cfg = lm_config("tiny");
  PackedRows rows(tiny_corpus(), cfg.seq_len, 0);
  int64_t padded_batches = 0;
  for (int64_t first = 0; first < 400; first += 4) {
    const LmBatch plain = make_batch(rows, first, 4, /*pad_to_8=*/false, c10::kCPU);
    const LmBatch padded = make_batch(rows, first, 4, /*pad_to_8=*/true, c10::kCPU);
    EXPECT_EQ(padded.length % 8, 0);
    EXPECT_GE(padded.length, plain.length);
    EXPECT_LE(padded.length, cfg.seq_len);
    EXPECT_EQ(padded.real_tokens, plain.real_tokens);
    EXPECT_EQ(padded.loss_mask.sum().item<int64_t>(), plain.loss_mask.sum().item<int64_t>());
    const int64_t n = plain.length;
    EXPECT_TRUE(at::equal(padded.inputs.narrow(1, 0, n), plain.inputs));
    EXPECT_TRUE(at::equal(padded.loss_mask.narrow(1, 0, n), plain.loss_mask));
    EXPECT_FALSE(padded.loss_mask.narrow(1, n, padded.length - n).any().item<bool>());
    if (padded.length != plain.length) ++padded_batches;
  }
  EXPECT_GT(padded_batches, 10)
      << "the corpus should give batches whose length is not a multiple of 8";
}

}  // namespace
}  // namespace sg::trainer
