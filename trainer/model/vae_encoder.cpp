// Causal 3-D conv VAE encoder (see vae_encoder.hpp).
#include "trainer/model/vae_encoder.hpp"

namespace sg::trainer {
namespace {

constexpr int64_t kCausalPad = 2;  // frames of left context of a kernel-3 causal conv
constexpr int64_t kChunk = 4;

at::Tensor layout(const at::Tensor& x, bool channels_last) {
  return channels_last ? x.contiguous(at::MemoryFormat::ChannelsLast3d) : x;
}

at::Tensor conv(Conv3d& c, const at::Tensor& x, bool channels_last) {
  return at::silu(c->forward(layout(x, channels_last)));
}

}  // namespace

VaeEncoderImpl::VaeEncoderImpl(const WamConfig& c) {
  spatial = register_module("spatial", torch::nn::ModuleList());
  int64_t in = 3;
  for (int64_t ch : c.vae_channels) {
    spatial->push_back(Conv3d(torch::nn::Conv3dOptions(in, ch, 3).stride({1, 2, 2}).padding({0, 1, 1})));
    in = ch;
  }
  time1 = register_module("time1", Conv3d(torch::nn::Conv3dOptions(in, in, {2, 1, 1}).stride({2, 1, 1})));
  time2 = register_module("time2", Conv3d(torch::nn::Conv3dOptions(in, in, {2, 1, 1}).stride({2, 1, 1})));
  out = register_module("out", Conv3d(torch::nn::Conv3dOptions(in, c.latent_channels, 1)));
}

at::Tensor VaeEncoderImpl::encode(const at::Tensor& video, const VaeOptions& opt) {
  auto z = opt.fullclip ? encode_fullclip(video, opt.channels_last) : encode_chunked(video, opt.channels_last);
  return z.contiguous();
}

at::Tensor VaeEncoderImpl::encode_fullclip(const at::Tensor& video, bool cl) {
  auto h = video;
  for (size_t i = 0; i < spatial->size(); ++i) {
    auto pad = torch::zeros({h.size(0), h.size(1), kCausalPad, h.size(3), h.size(4)}, h.options());
    h = at::silu(spatial->ptr<Conv3dImpl>(i)->forward(layout(torch::cat({pad, h}, 2), cl)));
  }
  auto first = h.narrow(2, 0, 1);
  auto rest = h.narrow(2, 1, h.size(2) - 1);
  rest = conv(time2, conv(time1, rest, cl), cl);
  return out->forward(layout(torch::cat({first, rest}, 2), cl));
}

at::Tensor VaeEncoderImpl::encode_chunked(const at::Tensor& video, bool cl) {
  const int64_t frames = video.size(2);
  std::vector<at::Tensor> caches(spatial->size());
  std::vector<at::Tensor> outs;
  for (int64_t start = 0; start < frames;) {
    const int64_t len = start == 0 ? 1 : kChunk;
    auto h = video.narrow(2, start, len);
    for (size_t i = 0; i < spatial->size(); ++i) {
      if (!caches[i].defined()) {
        caches[i] = torch::zeros({h.size(0), h.size(1), kCausalPad, h.size(3), h.size(4)}, h.options());
      }
      auto inp = torch::cat({caches[i], h}, 2);
      caches[i] = inp.narrow(2, inp.size(2) - kCausalPad, kCausalPad);
      h = at::silu(spatial->ptr<Conv3dImpl>(i)->forward(layout(inp, cl)));
    }
    if (start > 0) h = conv(time2, conv(time1, h, cl), cl);  // 4 frames -> 1; the first frame stays apart
    outs.push_back(out->forward(layout(h, cl)));
    start += len;
  }
  return torch::cat(outs, 2);
}

}  // namespace sg::trainer
