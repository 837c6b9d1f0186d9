// Frozen T5-style text encoder (see text_encoder.hpp).
#include "trainer/workload/wam/text_encoder.hpp"

#include <cmath>

namespace sg::trainer {
namespace {
constexpr int64_t kBuckets = 32;
constexpr int64_t kMaxDistance = 128;
}  // namespace

at::Tensor relative_position_buckets(int64_t length, int64_t num_buckets, int64_t max_distance,
                                     c10::Device device) {
  auto pos = torch::arange(length, torch::kLong);
  auto rel = pos.view({1, length}) - pos.view({length, 1});  // key - query
  const int64_t half = num_buckets / 2;
  auto bucket = (rel > 0).to(torch::kLong) * half;
  auto n = rel.abs();
  const int64_t max_exact = half / 2;
  auto is_small = n < max_exact;
  auto large = max_exact + (torch::log(n.clamp_min(1).to(torch::kDouble) / max_exact) /
                            std::log(double(max_distance) / max_exact) * double(half - max_exact))
                               .to(torch::kLong);
  large = torch::clamp_max(large, half - 1);
  bucket = bucket + torch::where(is_small, n, large);
  return bucket.to(device);
}

T5LayerImpl::T5LayerImpl(int64_t dim, int64_t heads_, int64_t ffn) : heads(heads_) {
  norm1 = register_module("norm1", RMSNorm(dim));
  q = register_module("q", Linear(torch::nn::LinearOptions(dim, dim).bias(false)));
  k = register_module("k", Linear(torch::nn::LinearOptions(dim, dim).bias(false)));
  v = register_module("v", Linear(torch::nn::LinearOptions(dim, dim).bias(false)));
  o = register_module("o", Linear(torch::nn::LinearOptions(dim, dim).bias(false)));
  rel_bias = register_module("rel_bias", Embedding(kBuckets, heads));
  norm2 = register_module("norm2", RMSNorm(dim));
  wi0 = register_module("wi0", Linear(torch::nn::LinearOptions(dim, ffn).bias(false)));
  wi1 = register_module("wi1", Linear(torch::nn::LinearOptions(dim, ffn).bias(false)));
  wo = register_module("wo", Linear(torch::nn::LinearOptions(ffn, dim).bias(false)));
}

at::Tensor T5LayerImpl::forward(const at::Tensor& x, const at::Tensor& key_mask,
                                const at::Tensor& buckets) {
  const int64_t b = x.size(0), l = x.size(1), dim = x.size(2), hd = dim / heads;
  auto h = norm1(x);
  auto qh = q(h).view({b, l, heads, hd}).transpose(1, 2);
  auto kh = k(h).view({b, l, heads, hd}).transpose(1, 2);
  auto vh = v(h).view({b, l, heads, hd}).transpose(1, 2);
  auto bias = rel_bias(buckets).permute({2, 0, 1}).unsqueeze(0);  // [1, H, L, L]
  auto scores = at::matmul(qh, kh.transpose(-2, -1)) / std::sqrt(double(hd)) + bias;
  scores = scores.masked_fill(key_mask.view({b, 1, 1, l}).logical_not(),
                              -std::numeric_limits<float>::infinity());
  auto probs = at::softmax(scores, -1, at::kFloat).to(vh.scalar_type());
  auto attn = at::matmul(probs, vh).transpose(1, 2).reshape({b, l, dim});
  auto y = x + o(attn);
  auto h2 = norm2(y);
  return y + wo(at::gelu(wi0(h2), "tanh") * wi1(h2));
}

TextEncoderImpl::TextEncoderImpl(const WamConfig& c) {
  embed = register_module("embed", Embedding(c.text_vocab, c.text_dim));
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.text_layers; ++i)
    layers->push_back(T5Layer(c.text_dim, c.text_heads, c.text_ffn));
  final_norm = register_module("final_norm", RMSNorm(c.text_dim));
}

at::Tensor TextEncoderImpl::forward(const at::Tensor& ids, const at::Tensor& mask) {
  auto buckets = relative_position_buckets(ids.size(1), kBuckets, kMaxDistance, ids.device());
  auto x = embed(ids);
  for (size_t i = 0; i < layers->size(); ++i)
    x = layers->ptr<T5LayerImpl>(i)->forward(x, mask, buckets);
  x = final_norm(x);
  return x * mask.unsqueeze(-1).to(x.scalar_type());
}

}  // namespace sg::trainer
