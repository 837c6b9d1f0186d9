// Test-only switches for the gate's mutation suite (docs/protocol.md section 4, beside
// SPEEDGATE_TEST_FAULT). With SPEEDGATE_TEST_MUTANTS=1 the switch table, and so the
// manifest, gains them after the real switches; with =only it lists them alone (a short
// campaign over them); unset or empty, they are unknown switches (exit 2), so they never
// reach a user's manifest, search or preset. Any other value is bad input.
//   NOOP_A, NOOP_B        bitwise: nothing at all
//   MUT_*                 recipe changes declared `tolerance` as a careless author might;
//                         a gate calibrated to rounding must reject those it can see
//   ROUND_*               legitimate rounding-only changes, declared `tolerance`
// The wam loop reads them through install_test_mutants(); flow_loss and Linear read the
// process's copy (test_mutants()). Every hook is an exact no-op when its switch is off.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace sg::trainer {

struct FlowTargets;
struct SwitchSpec;
struct Switches;

// Appends the mutants to the switch table as SPEEDGATE_TEST_MUTANTS asks (=only: in place
// of the real switches). Throws BadInputError for a value other than "", "1" or "only".
void add_test_mutant_switches(std::vector<SwitchSpec>& table);

struct TestMutants {
  double lr_factor = 1.0;            // MUT_LR_3: x1.03, MUT_LR_10: x1.10
  double weight_decay_factor = 1.0;  // MUT_WEIGHT_DECAY: x2
  bool beta2 = false;                // MUT_BETA2: Adam beta2 0.999 -> 0.99
  bool clip = false;                 // MUT_CLIP: clip at kMutClipNorm
  bool warmup = false;               // MUT_WARMUP: steps 0 and 1 at 1/3 and 2/3 of the rate
  bool drop_positions = false;       // MUT_DROP_POSITIONS: last 1/8 latent columns out of the loss
  bool bf16_output = false;          // ROUND_BF16_OUTPUT: predictions rounded to bf16
  bool bf16_linear = false;          // ROUND_BF16_LINEAR: biased linears computed in bf16
  bool f64_linear = false;           // ROUND_F64_LINEAR: biased linears in float64
  bool bf16_grads = false;           // ROUND_BF16_GRADS: gradients rounded to bf16

  // From the resolved switches: all off when the mutants are not in the table.
  static TestMutants from(const Switches& sw);

  torch::optim::AdamWOptions adamw(torch::optim::AdamWOptions options) const;
  double max_grad_norm(double recipe) const;
  // REQUIRES: gradients final for the step (after averaging over micro-batches and ranks).
  void round_gradients(const std::vector<at::Tensor>& params) const;
  // Warm-up scales the step's parameter change (AdamW's whole update, decay included, is
  // proportional to the rate; its moments are not): call before and after optim.step().
  std::vector<at::Tensor> before_update(const std::vector<at::Tensor>& params, int64_t step) const;
  void after_update(const std::vector<at::Tensor>& params, const std::vector<at::Tensor>& before,
                    int64_t step) const;

  bool changes_loss() const { return drop_positions || bf16_output; }
  at::Tensor flow_loss(const at::Tensor& pred_v, const at::Tensor& pred_a,
                       const FlowTargets& f) const;
  bool changes_linear() const { return bf16_linear || f64_linear; }
  // REQUIRES: bias defined, input of 3 or more dims (the biased matmul + add branch).
  at::Tensor linear(const at::Tensor& input, const at::Tensor& weight,
                    const at::Tensor& bias) const;
};

// Sets the process's mutants from the resolved switches (once per run, before the model
// runs) and returns them.
const TestMutants& install_test_mutants(const Switches& sw);
// The process's mutants (all off until install_test_mutants).
const TestMutants& test_mutants();

}  // namespace sg::trainer
