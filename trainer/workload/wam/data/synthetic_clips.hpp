// Deterministic synthetic dataset of the wam workload: short RGB uint8 clips of moving
// shapes (1 + 4k frames), the matching action sequence, and one of 40 prompts that
// describes the main object (colour x shape x direction), tokenised deterministically.
// A sample depends only on (seed, sample index).
#pragma once

#include "trainer/runtime/seed.hpp"
#include "trainer/workload/wam/wam_config.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace sg::trainer {

constexpr int kNumPrompts = 40;

class SyntheticClips {
 public:
  SyntheticClips(const WamConfig& cfg, uint64_t seed);

  // Writes frames [T, H, W, 3] uint8 and actions [Ta, Af] float32 of sample `index`.
  void make(int64_t index, uint8_t* frames, float* actions) const;
  int prompt_id(int64_t index) const;
  static const std::string& prompt(int id);

  // Word-level hashing tokenizer: ids in [2, vocab), 1 = end of sequence, 0 = padding;
  // truncated to text_len. Writes ids [L] and mask [L] (1 = token).
  void tokenize(const std::string& text, int64_t* ids, bool* mask) const;

  const WamConfig& config() const { return cfg_; }
  int64_t frame_bytes() const { return cfg_.frames * cfg_.height * cfg_.width * 3; }

 private:
  WamConfig cfg_;
  uint64_t seed_;
};

}  // namespace sg::trainer
