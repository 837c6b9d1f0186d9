// Seed derivation shared by every workload: splitmix64 mixes a run seed with a purpose or
// an index (weights, data order, noise, perturbation), so each draw has its own stream.
#pragma once

#include <cstdint>

namespace sg::trainer {

// One splitmix64 step: advances `state` and returns its next output.
inline uint64_t splitmix64_next(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// The mixing function for every derived seed in the trainer.
inline uint64_t mix_seed(uint64_t a, uint64_t b) {
  uint64_t state = a * 0x2545F4914F6CDD1DULL ^ (b + 0x632BE59BD9B4E019ULL);
  splitmix64_next(state);
  return splitmix64_next(state);
}

}  // namespace sg::trainer
