// Dimensions of the wam workload per size (tiny, small, base, wam5b) and the analytic
// parameter and model-FLOP counts the manifest reports. base and wam5b follow DESIGN.md's
// sizes table exactly; tiny and small are for CPU tests and quick runs.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace sg::trainer {

struct WamConfig {
  std::string name;
  // video block
  int64_t video_dim = 0, heads = 0, head_dim = 0, video_ffn = 0, layers = 0;
  // action block (projects to heads * head_dim for the joint attention)
  int64_t action_dim = 0, action_ffn = 0, action_tokens = 16, action_features = 20;
  // frozen T5-style text encoder
  int64_t text_dim = 0, text_layers = 0, text_heads = 0, text_len = 0, text_ffn = 0, text_vocab = 0;
  // clip (RGB uint8, 1 + 4k frames)
  int64_t frames = 0, height = 0, width = 0;
  // frozen causal 3-D conv VAE: 4 stride-2 spatial convs, 2 stride-2 temporal convs, 1x1x1 out
  std::array<int64_t, 4> vae_channels{};
  int64_t latent_channels = 16;
  int64_t patch_h = 2, patch_w = 2;  // patch 1 x 2 x 2
  int64_t freq_dim = 256;            // sinusoidal timestep embedding width
  int64_t default_micro_batch = 1;

  int64_t attn_dim() const { return heads * head_dim; }
  int64_t latent_frames() const { return 1 + (frames - 1) / 4; }
  int64_t latent_height() const { return height / 16; }
  int64_t latent_width() const { return width / 16; }
  int64_t grid_h() const { return latent_height() / patch_h; }
  int64_t grid_w() const { return latent_width() / patch_w; }
  int64_t video_tokens() const { return latent_frames() * grid_h() * grid_w(); }
  int64_t tokens_per_sample() const { return video_tokens() + action_tokens; }
  int64_t patch_features() const { return latent_channels * patch_h * patch_w; }
};

std::vector<std::string> wam_size_names();
// Throws BadInputError for an unknown size.
const WamConfig& wam_config(const std::string& size);

// Analytic counts; tests check them against the built modules for tiny and small.
int64_t trainable_params(const WamConfig& c);
int64_t text_encoder_params(const WamConfig& c);
int64_t vae_params(const WamConfig& c);
// Model FLOPs of one training sample: 3x the forward matmul + attention FLOPs of the
// trainable backbone at nominal shapes (frozen encoders and recompute excluded).
double model_flops_per_sample(const WamConfig& c);

}  // namespace sg::trainer
