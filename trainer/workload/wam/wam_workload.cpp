// The wam workload (see wam_workload.hpp).
#include "trainer/workload/wam/wam_workload.hpp"

#include "kernels/common/dispatch.hpp"
#include "trainer/model/init_device.hpp"
#include "trainer/runtime/autocast.hpp"
#include "trainer/runtime/phase_profile.hpp"
#include "trainer/workload/wam/flow_matching.hpp"

namespace sg::trainer {
namespace {

int64_t bytes_of(const std::vector<at::Tensor>& ts) {
  int64_t n = 0;
  for (const auto& t : ts) n += t.numel() * static_cast<int64_t>(t.element_size());
  return n;
}

void freeze(torch::nn::Module& m) {
  m.eval();
  for (auto& p : m.parameters()) p.requires_grad_(false);
}

}  // namespace

WamWorkload::WamWorkload(const WamConfig& c, const Switches& sw, c10::Device device, uint64_t seed)
    : cfg(c), sw_(sw), device_(device), autocast_(device.is_cuda()) {
  // Every parameter is created and initialised on `device` (init_device.hpp): a CUDA run
  // neither draws ~2 B values on the CPU nor copies them over.
  ParameterDeviceScope on_device(device);
  // Frozen "pretrained" modules first, from a fixed seed; bf16 on CUDA.
  torch::manual_seed(kFrozenSeed);
  text_encoder_ = TextEncoder(c);
  vae_ = VaeEncoder(c);
  freeze(*text_encoder_);
  freeze(*vae_);
  if (device.is_cuda()) {
    text_encoder_->to(at::kBFloat16);
    vae_->to(at::kBFloat16);
  }
  // The trainable backbone from the run seed, fp32 master weights.
  torch::manual_seed(seed);
  ModelOptions mo;
  mo.backend = parse_attn_backend(sw.attn_backend);
  mo.ckpt_layers = sw.ckpt_layers;
  mo.mixed_attn_ckpt = sw.mixed_attn_ckpt;
  mo.memoize_tables = sw.fast_input;
  mo.cuda_graphs = sw.cuda_graphs;
  // Process-wide (one workload per process): the fused kernel families the switches select.
  sg::kernels::select_kernels({{{"ROPE", sw.fused_rope},
                                {"CAT", sw.fast_cat},
                                {"ADALN", sw.fused_adaln},
                                {"QKNORM", sw.fused_qk_norm}},
                               sw.kernel_params});
  model = WamModel(c, mo);
  require_on_device(*model, device);
  require_on_device(*text_encoder_, device);
  require_on_device(*vae_, device);
  release_cached_memory(device);  // the fp32 frozen weights before their bf16 cast
  text_ = std::make_unique<TextConditioner>(text_encoder_, sw, device);
}

TextContext WamWorkload::encode_text(const DeviceBatch& batch) {
  ScopedPhase phase("text", device_);
  return text_->encode(batch.token_ids_host, batch.token_mask_host);
}

at::Tensor WamWorkload::encode_video(const DeviceBatch& batch) {
  torch::NoGradGuard no_grad;
  ScopedPhase phase("vae", device_);
  return vae_->encode(batch.video, {sw_.vae_fullclip, sw_.vae_channels_last});
}

at::Tensor WamWorkload::loss(const DeviceBatch& batch, uint64_t noise_seed) {
  AutocastScope autocast({autocast_, at::kBFloat16});
  TextContext ctx;
  at::Tensor latents;
  if (sw_.vae_first) {
    latents = encode_video(batch);
    ctx = encode_text(batch);
  } else {
    ctx = encode_text(batch);
    latents = encode_video(batch);
  }
  ScopedPhase phase("forward", device_);
  const auto flow =
      flow_targets(latents, batch.actions, batch.sample_ids, noise_seed, sw_.fast_input);
  const auto pred = model->forward(flow.x_t, flow.a_t, flow.t, ctx.rows, ctx.mask, ctx.all_visible);
  return flow_loss(pred.video, pred.action, flow);
}

std::vector<std::pair<std::string, at::Tensor>> WamWorkload::named_frozen() const {
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (const auto& item : text_encoder_->named_parameters()) {
    out.emplace_back("text_encoder." + item.key(), item.value());
  }
  for (const auto& item : vae_->named_parameters())
    out.emplace_back("vae." + item.key(), item.value());
  return out;
}

std::vector<std::pair<std::string, at::Tensor>> WamWorkload::named_trainable() const {
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (const auto& item : model->named_parameters()) out.emplace_back(item.key(), item.value());
  return out;
}

int64_t WamWorkload::frozen_device_bytes() const {
  int64_t n = bytes_of(vae_->parameters());
  if (!text_->offload()) n += bytes_of(text_encoder_->parameters());
  return n;
}

}  // namespace sg::trainer
