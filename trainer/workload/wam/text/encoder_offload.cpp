// Frozen-encoder weight offload (see encoder_offload.hpp).
#include "trainer/workload/wam/text/encoder_offload.hpp"

namespace sg::trainer {
namespace {
constexpr int64_t kAlignElements = 128;
int64_t round_up(int64_t n) { return (n + kAlignElements - 1) / kAlignElements * kAlignElements; }
}  // namespace

EncoderOffload::EncoderOffload(torch::nn::Module& module, c10::Device device) : device_(device) {
  params_ = module.parameters();
  int64_t total = 0;
  for (const auto& p : params_) {
    offsets_.push_back(total);
    shapes_.push_back(p.sizes().vec());
    numels_.push_back(p.numel());
    total += round_up(p.numel());
  }
  if (params_.empty()) return;
  host_ = at::empty(
      {total}, at::TensorOptions().dtype(params_[0].scalar_type()).pinned_memory(device.is_cuda()));
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    host_.narrow(0, offsets_[i], params_[i].numel()).copy_(params_[i].reshape({-1}));
  }
  release();
}

void EncoderOffload::load() {
  if (params_.empty()) return;
  ++loads;
  auto flat = host_.to(device_, /*non_blocking=*/host_.is_pinned(), /*copy=*/true);
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    params_[i].set_data(flat.narrow(0, offsets_[i], numels_[i]).view(shapes_[i]));
  }
}

void EncoderOffload::release() {
  for (auto& p : params_) p.set_data(at::empty({0}, p.options()));
}

}  // namespace sg::trainer
