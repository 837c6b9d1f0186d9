// Frozen causal 3-D conv video VAE encoder: 4 stride-2 spatial causal 3x3x3 convs
// (SiLU), 2 stride-2 temporal convs, a 1x1x1 conv to the latent channels; the first
// frame is kept apart by the temporal downsampling (1 + 4k frames -> 1 + k latents).
// encode_chunked runs the first frame, then 4-frame chunks, carrying each causal conv's
// last two input frames between chunks; encode_fullclip runs each layer once over the
// whole clip. Both compute the same function.
#pragma once

#include "trainer/model/device_modules.hpp"
#include "trainer/workload/wam/wam_config.hpp"

#include <torch/torch.h>

#include <optional>
#include <vector>

namespace sg::trainer {

struct VaeOptions {
  bool fullclip = false;       // one pass over the clip instead of chunk by chunk
  bool channels_last = false;  // ChannelsLast3d convolutions; latents returned contiguous
  // How a causal conv gets its input (left context, then the frames): false = cat them,
  // then convert to the conv's layout (two copies of every activation); true = allocate
  // that input in the conv's layout and let the previous layer's SiLU write its frames into
  // it after the context (no copy). The same values in the same layout, so the convs give
  // the same bits; SiLU computes each element with one functor on CUDA whatever the output's
  // strides, while ATen's CPU SiLU takes a scalar or a vector path by position (1-ulp
  // apart), so it could differ there. Unset: true on CUDA (on the H200 the copies were
  // ~6 % of a fast step at micro-batch 32), false elsewhere.
  std::optional<bool> context_in_place;
};

struct VaeEncoderImpl : torch::nn::Module {
  explicit VaeEncoderImpl(const WamConfig& c);
  // video [B, 3, T, H, W] in [-1, 1], T = 1 + 4k. Returns latents [B, z, 1 + k, H/16, W/16].
  at::Tensor encode(const at::Tensor& video, const VaeOptions& opt);
  at::Tensor encode_chunked(const at::Tensor& video, bool channels_last, bool in_place);
  at::Tensor encode_fullclip(const at::Tensor& video, bool channels_last, bool in_place);
  // The spatial convs over `frames` [B, 3, T, H, W]; `contexts` (one per conv) holds each
  // conv's left context (undefined: zeros) and is replaced by its input's last frames
  // (nullptr: no carry). Returns the last conv's SiLU output.
  at::Tensor spatial_convs(const at::Tensor& frames, std::vector<at::Tensor>* contexts,
                           bool channels_last, bool in_place);

  torch::nn::ModuleList spatial{nullptr};  // Conv3d k3, stride (1, 2, 2), spatial pad 1
  Conv3d time1{nullptr}, time2{nullptr}, out{nullptr};
};
TORCH_MODULE(VaeEncoder);

}  // namespace sg::trainer
