// Size table and analytic counts of the lm workload (see lm_config.hpp, docs/workloads.md).
#include "trainer/workload/lm/lm_config.hpp"

#include "trainer/workload/size_table.hpp"

#include <algorithm>

namespace sg::trainer {
namespace {

LmConfig make(const char* name, int64_t vocab, int64_t dim, int64_t layers, int64_t heads,
              int64_t kv_heads, int64_t head_dim, int64_t ffn, int64_t seq_len,
              int64_t micro_batch) {
  LmConfig c;
  c.name = name;
  c.vocab = vocab, c.dim = dim, c.layers = layers, c.heads = heads, c.kv_heads = kv_heads;
  c.head_dim = head_dim, c.ffn = ffn, c.seq_len = seq_len, c.default_micro_batch = micro_batch;
  return c;
}

const std::vector<LmConfig>& table() {
  static const std::vector<LmConfig> kSizes = {
      //    name   vocab   dim    L   H  kv   hd   ffn   seq  mb
      make("tiny", 512, 64, 2, 4, 2, 16, 176, 128, 4),
      make("small", 4096, 256, 4, 8, 2, 32, 704, 256, 4),
      make("1b", 32000, 2048, 16, 32, 8, 64, 8192, 2048, 8),
      make("3b", 32000, 3072, 28, 24, 8, 128, 8192, 2048, 4),
  };
  return kSizes;
}

// The seven block linears as (in, out): q, k, v, o, gate, up, down.
std::vector<std::pair<int64_t, int64_t>> block_linears(const LmConfig& c) {
  return {{c.dim, c.q_dim()}, {c.dim, c.kv_dim()}, {c.dim, c.kv_dim()}, {c.q_dim(), c.dim},
          {c.dim, c.ffn},     {c.dim, c.ffn},      {c.ffn, c.dim}};
}

}  // namespace

std::vector<std::string> lm_size_names() { return size_names(table()); }

const LmConfig& lm_config(const std::string& size) { return find_size(table(), size, "lm"); }

int64_t osft_low_rank(int64_t in, int64_t out) {
  return std::max<int64_t>(1, std::min(in, out) * kOsftLowRankPercent / 100);
}

int64_t lm_trainable_params(const LmConfig& c, bool osft) {
  int64_t block = 2 * c.dim;  // attention and MLP RMSNorm weights
  for (const auto& [in, out] : block_linears(c)) {
    block += osft ? osft_low_rank(in, out) * (in + out + 1) : in * out;
  }
  return c.vocab * c.dim + c.layers * block + c.dim;  // tied embedding, blocks, final norm
}

int64_t lm_frozen_params(const LmConfig& c, bool osft) {
  if (!osft) return 0;
  int64_t block = 0;
  for (const auto& [in, out] : block_linears(c)) {
    block += (std::min(in, out) - osft_low_rank(in, out)) * (in + out + 1);
  }
  return c.layers * block;
}

double lm_model_flops_per_token(const LmConfig& c) {
  double matmul = static_cast<double>(c.vocab) * static_cast<double>(c.dim);  // output projection
  for (const auto& [in, out] : block_linears(c)) matmul += static_cast<double>(c.layers) * in * out;
  const double attention = 2.0 * static_cast<double>(c.layers) * static_cast<double>(c.q_dim()) *
                           static_cast<double>(c.seq_len);  // q·k and p·v per token, forward
  return 3.0 * 2.0 * (matmul + attention);
}

}  // namespace sg::trainer
