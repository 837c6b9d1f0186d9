// Packed rows of the lm workload and their collation into a batch. Row `index` depends
// only on (seed, index): whole documents, each followed by an end-of-document token,
// from a start document chosen by hashing (seed, index), until the next document would
// not fit in seq_len + 1 tokens (a first document longer than that is truncated).
// Inputs are a row's tokens but the last, targets its tokens but the first. A target
// counts in the loss only when it belongs to the same document as its input, so no
// document is predicted from another one; attention is block-diagonal causal over the
// same document ids (lm_attention.hpp). Rows are padded to the batch's longest row, and
// with PAD_TO_8 further up to a multiple of 8 positions; padding is never in the loss.
#pragma once

#include "trainer/workload/lm/corpus.hpp"

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace sg::trainer {

struct PackedRow {
  std::vector<int64_t> tokens;
  std::vector<int64_t> doc;  // per token: 0 for the first document of the row, 1 for the next, ...
};

struct LmBatch {
  at::Tensor inputs;        // [B, L] int64, kPadId on padding
  at::Tensor targets;       // [B, L] int64, kPadId where not in the loss
  at::Tensor loss_mask;     // [B, L] bool: the target is a real token of the input's document
  at::Tensor doc_ids;       // [B, L] int64: document number within the row, -1 on padding
  int64_t real_tokens = 0;  // loss_mask's true count (the same with or without PAD_TO_8)
  int64_t length = 0;       // L
};

class PackedRows {
 public:
  PackedRows(const Corpus& corpus, int64_t seq_len, uint64_t seed);
  PackedRow row(int64_t index) const;

 private:
  const Corpus& corpus_;
  int64_t seq_len_;
  uint64_t seed_;
};

// REQUIRES: rows non-empty, every row at least 2 tokens.
LmBatch collate(const std::vector<PackedRow>& rows, bool pad_to_8);

// Rows first_index .. first_index + count - 1, collated and moved to `device`.
LmBatch make_batch(const PackedRows& rows, int64_t first_index, int64_t count, bool pad_to_8,
                   c10::Device device);

}  // namespace sg::trainer
