// Host batch -> device tensors (see device_batch.hpp).
#include "trainer/workload/wam/data/device_batch.hpp"

namespace sg::trainer {

at::Tensor pixels_to_float(const at::Tensor& u8) {
  constexpr double kScale = 1.0 / 127.5;
  return u8.to(at::kFloat).mul(kScale).sub(1.0);
}

DeviceBatch to_device(const HostBatch& batch, c10::Device device, bool fast_input) {
  DeviceBatch out;
  out.sample_ids = batch.sample_ids;
  out.token_ids_host = batch.token_ids;
  out.token_mask_host = batch.token_mask;
  if (fast_input) {
    const bool async = batch.clip_u8.is_pinned();
    out.video = pixels_to_float(batch.clip_u8.to(device, /*non_blocking=*/async))
                    .permute({0, 4, 1, 2, 3})
                    .contiguous();
    out.actions = batch.actions.to(device, /*non_blocking=*/batch.actions.is_pinned());
    return out;
  }
  std::vector<at::Tensor> clips;
  for (const auto& frames : batch.frames) {
    std::vector<at::Tensor> converted;
    for (int64_t t = 0; t < frames.size(0); ++t)
      converted.push_back(pixels_to_float(frames.select(0, t)));
    clips.push_back(at::stack(converted, 0).permute({3, 0, 1, 2}));
  }
  out.video = at::stack(clips, 0).contiguous().to(device);
  out.actions = batch.actions.to(device);
  return out;
}

}  // namespace sg::trainer
