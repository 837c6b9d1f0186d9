// The wam workload as the training loop sees it: the trainable backbone, the frozen
// text encoder and VAE, and one call that turns a device batch into the loss. Switches
// reach the modules they change here (input order, VAE mode, text path, kernels).
#pragma once

#include "trainer/switches/switches.hpp"
#include "trainer/workload/wam/data/device_batch.hpp"
#include "trainer/workload/wam/text/text_conditioner.hpp"
#include "trainer/workload/wam/vae_encoder.hpp"
#include "trainer/workload/wam/wam_model.hpp"

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

namespace sg::trainer {

// Frozen modules are "pretrained": initialised from this seed whatever the run seed.
constexpr uint64_t kFrozenSeed = 20261130;

class WamWorkload {
 public:
  WamWorkload(const WamConfig& cfg, const Switches& sw, c10::Device device, uint64_t seed);

  // Loss of one micro-batch (float32 scalar); noise and t come from (noise_seed, sample id).
  at::Tensor loss(const DeviceBatch& batch, uint64_t noise_seed);

  // Trainable parameters in registration order, with their names.
  std::vector<std::pair<std::string, at::Tensor>> named_trainable() const;
  // Frozen parameters (text encoder, then VAE) with their names; bf16 on CUDA.
  std::vector<std::pair<std::string, at::Tensor>> named_frozen() const;
  int64_t frozen_device_bytes() const;
  const TextConditioner& text() const { return *text_; }

  WamConfig cfg;
  WamModel model{nullptr};

 private:
  TextContext encode_text(const DeviceBatch& batch);
  at::Tensor encode_video(const DeviceBatch& batch);

  Switches sw_;
  c10::Device device_;
  bool autocast_;
  VaeEncoder vae_{nullptr};
  TextEncoder text_encoder_{nullptr};
  std::unique_ptr<TextConditioner> text_;
};

}  // namespace sg::trainer
