// Word-hashing tokenizer of the lm workload (like the wam prompt tokenizer): a word is a
// run of letters/digits/apostrophes, every other non-space byte is a token of its own;
// each token's FNV-1a hash picks an id in [kFirstWordId, vocab). Deterministic, no
// vocabulary file; collisions are allowed (the model sees a hashed vocabulary).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sg::trainer {

constexpr int64_t kPadId = 0;
constexpr int64_t kEosId = 1;
constexpr int64_t kFirstWordId = 2;

// REQUIRES: vocab > kFirstWordId.
std::vector<int64_t> tokenize_words(const std::string& text, int64_t vocab);

}  // namespace sg::trainer
