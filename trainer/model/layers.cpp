// Backbone building blocks (see layers.hpp).
#include "trainer/model/layers.hpp"

#include "kernels/qk_norm/qk_norm.hpp"
#include "trainer/errors.hpp"
#include "trainer/model/init_device.hpp"

#include <torch/version.h>

#include <cmath>

namespace sg::trainer {

AttnBackend parse_attn_backend(const std::string& name) {
  if (name == "math") return AttnBackend::kMath;
  if (name == "efficient") return AttnBackend::kEfficient;
  if (name == "flash") return AttnBackend::kFlash;
  if (name == "cudnn") return AttnBackend::kCudnn;
  throw BadInputError("unknown attention backend " + name);
}

RMSNormImpl::RMSNormImpl(int64_t dim, double eps_) : eps(eps_) {
  weight = register_parameter("weight", torch::ones({dim}, parameter_options()));
}

// The reference composite (kernels/qk_norm/qk_norm_reference.cpp), or the fused QKNORM
// variant when FUSED_QK_NORM selects it.
at::Tensor RMSNormImpl::forward(const at::Tensor& x) {
  return sg::kernels::rms_norm(x, weight, eps);
}

MlpImpl::MlpImpl(int64_t dim, int64_t hidden) {
  fc1 = register_module("fc1", Linear(dim, hidden));
  fc2 = register_module("fc2", Linear(hidden, dim));
}

at::Tensor MlpImpl::forward(const at::Tensor& x) { return fc2(at::gelu(fc1(x), "tanh")); }

namespace {

at::Tensor attention_math(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                          const at::Tensor& mask) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  auto qh = q.transpose(1, 2);  // [B, H, Sq, D]
  auto kh = k.transpose(1, 2);
  auto vh = v.transpose(1, 2);
  auto scores = at::matmul(qh, kh.transpose(-2, -1)) * scale;
  if (mask.defined())
    scores = scores.masked_fill(mask.logical_not(), -std::numeric_limits<float>::infinity());
  auto probs = at::softmax(scores, -1, at::kFloat).to(vh.scalar_type());
  return at::matmul(probs, vh);  // [B, H, Sq, D]
}

#if TORCH_VERSION_MAJOR >= 2
// Enables exactly one SDPA kernel family for the call (flash falls back to memory
// efficient for masked calls, which flash cannot run) and restores the flags after.
class SdpaBackendScope {
 public:
  explicit SdpaBackendScope(AttnBackend b, bool masked) {
    auto& ctx = at::globalContext();
    saved_ = {ctx.userEnabledFlashSDP(), ctx.userEnabledMemEfficientSDP(), ctx.userEnabledMathSDP(),
              ctx.userEnabledCuDNNSDP()};
    const bool flash = b == AttnBackend::kFlash && !masked;
    ctx.setSDPUseFlash(flash);
    ctx.setSDPUseMemEfficient(b == AttnBackend::kEfficient || (b == AttnBackend::kFlash && masked));
    ctx.setSDPUseMath(false);
    ctx.setSDPUseCuDNN(b == AttnBackend::kCudnn);
  }
  ~SdpaBackendScope() {
    auto& ctx = at::globalContext();
    ctx.setSDPUseFlash(saved_[0]);
    ctx.setSDPUseMemEfficient(saved_[1]);
    ctx.setSDPUseMath(saved_[2]);
    ctx.setSDPUseCuDNN(saved_[3]);
  }

 private:
  std::array<bool, 4> saved_{};
};
#endif

}  // namespace

at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     const at::Tensor& mask, AttnBackend backend) {
  const int64_t b = q.size(0), sq = q.size(1), h = q.size(2), d = q.size(3);
  at::Tensor out;
  if (backend == AttnBackend::kMath) {
    out = attention_math(q, k, v, mask);
  } else {
#if TORCH_VERSION_MAJOR >= 2
    // An undefined mask means none; callers pass an all-visible mask as none (the host
    // never reads a mask here: that would be a device sync per call).
    const bool masked = mask.defined();
    SdpaBackendScope scope(backend, masked);
    auto qh = q.transpose(1, 2), kh = k.transpose(1, 2), vh = v.transpose(1, 2);
    // The mask goes in as broadcastable ([S, S] as [1, 1, S, S]), never expanded: SDPA turns a
    // boolean mask into an additive bias of the mask's own shape (where(!mask, -inf, 0)), so
    // an expanded [B, H, S, S] view became a B*H*S*S bias per call (wam base at micro-batch
    // 32: 1.7 GB written, read by the kernel and kept for backward, per joint attention).
    if (masked) {
      const auto broadcast_mask =
          mask.dim() == 2 ? mask.view({1, 1, mask.size(0), mask.size(1)}) : mask;
      out = at::scaled_dot_product_attention(qh, kh, vh, broadcast_mask);
    } else {
      out = at::scaled_dot_product_attention(qh, kh, vh);
    }
#else
    throw BadInputError("attention backends other than math need LibTorch >= 2.0");
#endif
  }
  return out.transpose(1, 2).reshape({b, sq, h * d});
}

void register_attention_projections(torch::nn::Module& m, const std::string& suffix, int64_t in,
                                    int64_t attn, const AttentionProjections& p) {
  p.q = m.register_module("q" + suffix, Linear(in, attn));
  p.k = m.register_module("k" + suffix, Linear(in, attn));
  p.v = m.register_module("v" + suffix, Linear(in, attn));
  p.o = m.register_module("o" + suffix, Linear(attn, in));
  p.norm_q = m.register_module("norm_q" + suffix, RMSNorm(attn));
  p.norm_k = m.register_module("norm_k" + suffix, RMSNorm(attn));
}

CrossAttentionImpl::CrossAttentionImpl(int64_t dim, int64_t heads_) : heads(heads_) {
  norm = register_module("norm", LayerNorm(torch::nn::LayerNormOptions({dim}).eps(1e-6)));
  register_attention_projections(*this, "", dim, dim, {q, k, v, o, norm_q, norm_k});
}

at::Tensor CrossAttentionImpl::forward(const at::Tensor& x, const at::Tensor& context,
                                       const at::Tensor& context_mask, AttnBackend backend) {
  const int64_t b = x.size(0), s = x.size(1), l = context.size(1), dim = x.size(2);
  auto h = norm(x);
  auto qh = norm_q(q(h)).view({b, s, heads, dim / heads});
  auto kh = norm_k(k(context)).view({b, l, heads, dim / heads});
  auto vh = v(context).view({b, l, heads, dim / heads});
  auto mask = context_mask.defined() ? context_mask.view({b, 1, 1, l}) : at::Tensor();
  return o(attention(qh, kh, vh, mask, backend));
}

at::Tensor timestep_embedding(const at::Tensor& t, int64_t dim) {
  const int64_t half = dim / 2;
  auto pos = t.to(at::kDouble) * 1000.0;
  auto exponent = at::arange(half, t.options().dtype(at::kDouble)).div(static_cast<double>(half));
  auto freqs = at::pow(10000.0, exponent.neg());
  auto args = at::outer(pos, freqs);
  return at::cat({at::cos(args), at::sin(args)}, /*dim=*/1).to(at::kFloat);
}

TimeEmbeddingImpl::TimeEmbeddingImpl(int64_t freq_dim_, int64_t dim_)
    : freq_dim(freq_dim_), dim(dim_) {
  fc1 = register_module("fc1", Linear(freq_dim, dim));
  fc2 = register_module("fc2", Linear(dim, dim));
  proj = register_module("proj", Linear(dim, 6 * dim));
}

std::pair<at::Tensor, at::Tensor> TimeEmbeddingImpl::forward(const at::Tensor& t) {
  auto e = fc2(at::silu(fc1(timestep_embedding(t, freq_dim))));
  auto e0 = proj(at::silu(e)).view({t.size(0), 6, dim});
  return {e, e0};
}

}  // namespace sg::trainer
