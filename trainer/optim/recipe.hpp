// The training recipe every workload's loop shares: AdamW at a constant learning rate,
// global-norm clipping, and eval data fixed whatever the run seed (so eval losses
// compare across seeds; eval samples start far beyond any training sample index).
#pragma once

#include <cstdint>

namespace sg::trainer {

inline constexpr double kLearningRate = 1e-4;
inline constexpr double kWeightDecay = 0.01;
inline constexpr double kMaxGradNorm = 1.0;
inline constexpr uint64_t kEvalSeed = 0xe7a1;
inline constexpr int64_t kEvalFirstSample = int64_t{1} << 40;

}  // namespace sg::trainer
