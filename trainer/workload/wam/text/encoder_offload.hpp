// TEXT_ENCODER_OFFLOAD: the frozen encoder's weights live in one host buffer (pinned on
// CUDA builds) and are copied to the device into one flat buffer only while an encode
// runs; afterwards the device copy is released. Offsets are padded to 128 elements so
// the device views keep the alignment of separately allocated tensors (GEMM kernels can
// depend on alignment; rows must stay bitwise the same).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace sg::trainer {

class EncoderOffload {
 public:
  // Moves every parameter of `module` into the host buffer and releases the device copies.
  EncoderOffload(torch::nn::Module& module, c10::Device device);

  // RAII: weights on the device for the scope.
  class Loaded {
   public:
    explicit Loaded(EncoderOffload& o) : o_(o) { o_.load(); }
    ~Loaded() { o_.release(); }
    Loaded(const Loaded&) = delete;
    Loaded& operator=(const Loaded&) = delete;

   private:
    EncoderOffload& o_;
  };

  int64_t host_bytes() const { return host_.numel() * host_.element_size(); }
  int64_t loads = 0;

 private:
  void load();
  void release();

  std::vector<at::Tensor> params_;
  std::vector<int64_t> offsets_;
  std::vector<int64_t> numels_;
  std::vector<std::vector<int64_t>> shapes_;
  at::Tensor host_;
  c10::Device device_;
};

}  // namespace sg::trainer
