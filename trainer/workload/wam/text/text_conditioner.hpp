// Text conditioning of a batch: token ids -> frozen encoder rows + key mask, with the
// opt-in cache (TEXT_CACHE), the fast miss path (TEXT_MISS_FAST), context truncation
// (CONTEXT_TRUNC) and weight offload (TEXT_ENCODER_OFFLOAD) living here, not in the loop.
#pragma once

#include "trainer/switches/switches.hpp"
#include "trainer/workload/wam/text/encoder_offload.hpp"
#include "trainer/workload/wam/text/text_cache.hpp"
#include "trainer/workload/wam/text_encoder.hpp"

#include <torch/torch.h>

#include <memory>

namespace sg::trainer {

struct TextContext {
  at::Tensor rows;           // [B, L', text_dim]
  at::Tensor mask;           // [B, L'] bool
  bool all_visible = false;  // every entry of mask is true (from the host mask: no device sync)
};

class TextConditioner {
 public:
  // REQUIRES: encoder frozen and on `device`.
  TextConditioner(TextEncoder encoder, const Switches& sw, c10::Device device);

  // ids/mask on the host ([B, L] int64 / bool).
  TextContext encode(const at::Tensor& ids_host, const at::Tensor& mask_host);

  const TextCache* cache() const { return cache_.get(); }
  const EncoderOffload* offload() const { return offload_.get(); }

 private:
  at::Tensor run_encoder(const at::Tensor& ids_host, const at::Tensor& mask_host);
  at::Tensor encode_missing_fast(const at::Tensor& ids_host, const at::Tensor& mask_host,
                                 const std::vector<int64_t>& rows);

  TextEncoder encoder_;
  c10::Device device_;
  bool miss_fast_, truncate_;
  bool non_blocking_;
  std::unique_ptr<TextCache> cache_;
  std::unique_ptr<EncoderOffload> offload_;
};

}  // namespace sg::trainer
