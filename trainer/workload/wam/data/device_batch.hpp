// Moves a host batch to the compute device. Default: per-frame float conversion on the
// host, list stacking and blocking copies (the reference job's input path). FAST_INPUT:
// one non-blocking copy of the uint8 clip tensor and one batched conversion on the device
// with the same ops in the same order, so the model inputs are bitwise the same.
#pragma once

#include "trainer/workload/wam/data/clip_loader.hpp"

#include <torch/torch.h>

namespace sg::trainer {

struct DeviceBatch {
  std::vector<int64_t> sample_ids;
  at::Tensor video;            // [B, 3, T, H, W] float32 in [-1, 1]
  at::Tensor actions;          // [B, Ta, Af] float32
  at::Tensor token_ids_host;   // [B, L] int64 (text-cache keys are built on the host)
  at::Tensor token_mask_host;  // [B, L] bool
};

DeviceBatch to_device(const HostBatch& batch, c10::Device device, bool fast_input);

// uint8 pixels -> float in [-1, 1]: x * (1 / 127.5) - 1, elementwise.
at::Tensor pixels_to_float(const at::Tensor& u8);

}  // namespace sg::trainer
