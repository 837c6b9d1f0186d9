// Frozen causal 3-D conv video VAE encoder: 4 stride-2 spatial causal 3x3x3 convs
// (SiLU), 2 stride-2 temporal convs, a 1x1x1 conv to the latent channels; the first
// frame is kept apart by the temporal downsampling (1 + 4k frames -> 1 + k latents).
// encode_chunked runs the first frame, then 4-frame chunks, carrying each causal conv's
// last two input frames between chunks; encode_fullclip runs each layer once over the
// whole clip. Both compute the same function.
#pragma once

#include "trainer/model/device_modules.hpp"
#include "trainer/model/wam_config.hpp"

#include <torch/torch.h>

namespace sg::trainer {

struct VaeOptions {
  bool fullclip = false;       // one pass over the clip instead of chunk by chunk
  bool channels_last = false;  // ChannelsLast3d convolutions; latents returned contiguous
};

struct VaeEncoderImpl : torch::nn::Module {
  explicit VaeEncoderImpl(const WamConfig& c);
  // video [B, 3, T, H, W] in [-1, 1], T = 1 + 4k. Returns latents [B, z, 1 + k, H/16, W/16].
  at::Tensor encode(const at::Tensor& video, const VaeOptions& opt);
  at::Tensor encode_chunked(const at::Tensor& video, bool channels_last);
  at::Tensor encode_fullclip(const at::Tensor& video, bool channels_last);

  torch::nn::ModuleList spatial{nullptr};  // Conv3d k3, stride (1, 2, 2), spatial pad 1
  Conv3d time1{nullptr}, time2{nullptr}, out{nullptr};
};
TORCH_MODULE(VaeEncoder);

}  // namespace sg::trainer
