// Dimensions of the lm workload (decoder-only transformer: RMSNorm, 1-D RoPE, grouped-
// query attention, SwiGLU, tied embeddings) per size, and the analytic parameter and
// model-FLOP counts the manifest reports. 1b and 3b follow Llama 3.2 1B / 3B shapes with
// a 32000-word vocabulary. Workload "lm_osft" is the same model with every block linear
// factorised by SVD and only its low-singular-value part trained (osft_linear.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sg::trainer {

struct LmConfig {
  std::string name;
  int64_t vocab = 0;  // token ids: 0 padding, 1 end of document, words from 2
  int64_t dim = 0;    // model width
  int64_t layers = 0;
  int64_t heads = 0;     // query heads
  int64_t kv_heads = 0;  // key/value heads (grouped-query attention: heads % kv_heads == 0)
  int64_t head_dim = 0;
  int64_t ffn = 0;      // SwiGLU hidden width
  int64_t seq_len = 0;  // packed row length (inputs); a multiple of 8
  int64_t default_micro_batch = 1;
  double rope_theta = 500000.0;
  double norm_eps = 1e-5;

  int64_t q_dim() const { return heads * head_dim; }
  int64_t kv_dim() const { return kv_heads * head_dim; }
};

// OSFT: the trainable (low-singular-value) share of each factorised linear's rank, in percent.
constexpr int64_t kOsftLowRankPercent = 25;

std::vector<std::string> lm_size_names();
// Throws BadInputError for an unknown size.
const LmConfig& lm_config(const std::string& size);

// Rank of the low (trainable) part of a factorised in x out linear.
int64_t osft_low_rank(int64_t in, int64_t out);

// Analytic counts; tests check them against the built modules for tiny and small.
int64_t lm_trainable_params(const LmConfig& c, bool osft);
int64_t lm_frozen_params(const LmConfig& c, bool osft);
// Model FLOPs of one training token: 3x the forward matmul FLOPs (block linears and the
// tied output projection) plus 3x the attention scores and values at the full row
// length (PaLM's 6N + 12·L·H·Q·T per token; causal masking not credited). OSFT's
// reconstruction of W from its factors is excluded (it is per step, not per token).
double lm_model_flops_per_token(const LmConfig& c);

}  // namespace sg::trainer
