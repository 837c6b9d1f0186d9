// Rectified-flow (flow-matching) targets: x_t = (1 - t) x0 + t eps, target v = eps - x0,
// for video latents and actions with one t per sample. t (logit-normal) and eps are drawn
// per sample from a generator seeded by (seed, sample id), on the host, so they do not
// depend on batch composition, micro-batching or device.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace sg::trainer {

struct FlowTargets {
  at::Tensor t;         // [B]
  at::Tensor x_t, v;    // like the latents
  at::Tensor a_t, v_a;  // like the actions
};

// async_copies (FAST_INPUT): on CUDA the draws are stacked into pinned host memory and
// copied without blocking (a blocking copy from pageable memory waits for the device to
// drain); the same values either way.
FlowTargets flow_targets(const at::Tensor& latents, const at::Tensor& actions,
                         const std::vector<int64_t>& sample_ids, uint64_t seed, bool async_copies);

// Mean squared velocity error on video latents plus on actions, float32.
at::Tensor flow_loss(const at::Tensor& pred_v, const at::Tensor& pred_a, const FlowTargets& f);

}  // namespace sg::trainer
