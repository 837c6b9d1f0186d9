// A bias-free linear layer of the lm blocks, plain or OSFT-style factorised. Factorised:
// from the SVD of the initial weight W = U·diag(S)·Vᵀ (float64, singular values in
// descending order), the top (rank - k) directions are kept frozen (U_high, S_high,
// V_high, buffers) and the bottom k (= osft_low_rank) are trainable (U_low, S_low, V_low,
// parameters); the forward rebuilds W = U_high·S_high·V_highᵀ + U_low·S_low·V_lowᵀ with
// plain tensor ops and applies it. W at init is the plain layer's weight from the same
// seed, up to float rounding (tests/trainer/lm_model_test.cpp).
#pragma once

#include <torch/torch.h>

namespace sg::trainer {

struct LmLinearImpl : torch::nn::Module {
  // REQUIRES: the global RNG seeded by the caller (the weight is drawn from it).
  LmLinearImpl(int64_t in, int64_t out, bool osft);
  at::Tensor forward(const at::Tensor& x);
  // The weight the forward applies, [out, in].
  at::Tensor effective_weight() const;

  bool osft;
  at::Tensor weight;                  // plain: trainable [out, in]
  at::Tensor u_high, s_high, v_high;  // osft, frozen: [out, r-k], [r-k], [in, r-k]
  at::Tensor u_low, s_low, v_low;     // osft, trainable: [out, k], [k], [in, k]
};
TORCH_MODULE(LmLinear);

}  // namespace sg::trainer
