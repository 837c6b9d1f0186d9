// A training step's loss and gradient norm, read back to the host.
//
// Immediate (the default, like loss.item() in a training script): each value is read when
// it is made, a device sync each (the loss after forward, the norm after clipping).
// Lagged (ASYNC_STEP_STATS): both stay on the device; after the optimizer's kernels are
// queued one non-blocking copy into pinned host memory is queued with an event, and the
// values are read one step later, when the next step's gradients are queued. The host then
// never waits for the device mid-step and runs at most one step ahead. The values are the
// same bits either way: the same float additions, on the device instead of the host.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace sg::trainer {

struct StepValues {
  int64_t step = 0;
  float loss_sum = 0.0f;  // the micro-batch losses of the step, summed in order
  float grad_norm = 0.0f;
};

class StepStats {
 public:
  StepStats(c10::Device device, bool lagged);
  ~StepStats();

  void begin_step(int64_t step);
  // Adds one micro-batch's loss to the step's sum.
  void add_loss(const at::Tensor& loss);
  // The step's global gradient norm (a 0-dim float tensor).
  void set_grad_norm(const at::Tensor& norm);
  // Steps whose values are on the host now, oldest first, each returned once: immediate,
  // the current step; lagged, the steps ended before it (waiting for the device to finish
  // them, if it has not).
  std::vector<StepValues> ready();
  // Ends the step; call once its optimizer step is queued.
  void end_step();
  // Every step ended and not yet returned (lagged: waits for the device to finish them).
  std::vector<StepValues> flush();

 private:
  struct Pending;
  c10::Device device_;
  bool lagged_;
  int64_t step_ = 0;
  at::Tensor loss_sum_;   // the current step's: on the host (immediate) or the device (lagged)
  at::Tensor grad_norm_;  // immediate: cleared once ready() has returned the step
  std::vector<std::unique_ptr<Pending>> pending_;  // lagged: ended steps not yet returned
};

}  // namespace sg::trainer
