// Causal 3-D conv VAE encoder (see vae_encoder.hpp).
#include "trainer/workload/wam/vae_encoder.hpp"

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
    spatial->push_back(
        Conv3d(torch::nn::Conv3dOptions(in, ch, 3).stride({1, 2, 2}).padding({0, 1, 1})));
    in = ch;
  }
  time1 = register_module("time1",
                          Conv3d(torch::nn::Conv3dOptions(in, in, {2, 1, 1}).stride({2, 1, 1})));
  time2 = register_module("time2",
                          Conv3d(torch::nn::Conv3dOptions(in, in, {2, 1, 1}).stride({2, 1, 1})));
  out = register_module("out", Conv3d(torch::nn::Conv3dOptions(in, c.latent_channels, 1)));
}

at::Tensor VaeEncoderImpl::encode(const at::Tensor& video, const VaeOptions& opt) {
  const bool in_place = opt.context_in_place.value_or(video.is_cuda());
  auto z = opt.fullclip ? encode_fullclip(video, opt.channels_last, in_place)
                        : encode_chunked(video, opt.channels_last, in_place);
  return z.contiguous();
}

at::Tensor VaeEncoderImpl::spatial_convs(const at::Tensor& frames,
                                         std::vector<at::Tensor>* contexts, bool cl,
                                         bool in_place) {
  at::Tensor raw;  // the last conv's output, not yet activated
  for (size_t i = 0; i < spatial->size(); ++i) {
    at::Tensor context = contexts ? (*contexts)[i] : at::Tensor();
    at::Tensor input;
    if (!in_place) {
      const at::Tensor h = i == 0 ? frames : at::silu(raw);
      if (!context.defined())
        context =
            torch::zeros({h.size(0), h.size(1), kCausalPad, h.size(3), h.size(4)}, h.options());
      input = layout(torch::cat({context, h}, 2), cl);
    } else {
      const at::Tensor& body = i == 0 ? frames : raw;
      auto sizes = body.sizes().vec();
      sizes[2] += kCausalPad;
      input = at::empty(sizes, body.options().memory_format(cl ? at::MemoryFormat::ChannelsLast3d
                                                               : at::MemoryFormat::Contiguous));
      auto left = input.narrow(2, 0, kCausalPad);
      if (context.defined()) {
        left.copy_(context);
      } else {
        left.zero_();
      }
      auto rest = input.narrow(2, kCausalPad, body.size(2));
      if (i == 0) {
        rest.copy_(body);
      } else {
        at::silu_out(rest, body);
      }
    }
    if (contexts) (*contexts)[i] = input.narrow(2, input.size(2) - kCausalPad, kCausalPad);
    raw = spatial->ptr<Conv3dImpl>(i)->forward(input);
  }
  return at::silu(raw);
}

at::Tensor VaeEncoderImpl::encode_fullclip(const at::Tensor& video, bool cl, bool in_place) {
  auto h = spatial_convs(video, nullptr, cl, in_place);
  auto first = h.narrow(2, 0, 1);
  auto rest = h.narrow(2, 1, h.size(2) - 1);
  rest = conv(time2, conv(time1, rest, cl), cl);
  return out->forward(layout(torch::cat({first, rest}, 2), cl));
}

at::Tensor VaeEncoderImpl::encode_chunked(const at::Tensor& video, bool cl, bool in_place) {
  const int64_t frames = video.size(2);
  std::vector<at::Tensor> contexts(spatial->size());
  std::vector<at::Tensor> outs;
  for (int64_t start = 0; start < frames;) {
    const int64_t len = start == 0 ? 1 : kChunk;
    auto h = spatial_convs(video.narrow(2, start, len), &contexts, cl, in_place);
    if (start > 0)
      h = conv(time2, conv(time1, h, cl), cl);  // 4 frames -> 1; the first frame stays apart
    outs.push_back(out->forward(layout(h, cl)));
    start += len;
  }
  return torch::cat(outs, 2);
}

}  // namespace sg::trainer
