// The lm model: token embedding, decoder blocks (the first CKPT_LAYERS checkpointed),
// final RMSNorm and the output projection tied to the embedding; its loss is the summed
// next-token cross-entropy over the targets in the loss mask (packing.hpp).
#pragma once

#include "trainer/model/graphed_layer.hpp"
#include "trainer/model/layers.hpp"
#include "trainer/workload/lm/lm_block.hpp"
#include "trainer/workload/lm/lm_config.hpp"
#include "trainer/workload/lm/packing.hpp"

#include <torch/torch.h>

namespace sg::trainer {

struct LmModelOptions {
  AttnBackend backend = AttnBackend::kMath;
  int64_t ckpt_layers = -1;  // -1 every block, 0 none, k the first k
  bool osft = false;         // factorised block linears (workload lm_osft)
  bool cuda_graphs = false;  // replay the blocks not checkpointed as CUDA graphs
};

struct LmModelImpl : torch::nn::Module {
  // REQUIRES: the global RNG seeded by the caller.
  LmModelImpl(const LmConfig& c, LmModelOptions opt);
  // Logits [B, L, vocab] of inputs [B, L] with document ids [B, L].
  at::Tensor forward(const at::Tensor& inputs, const at::Tensor& doc_ids);
  // Sum of the cross-entropy over the batch's loss mask (float32 scalar).
  at::Tensor loss_sum(const LmBatch& batch);
  bool checkpoints_layer(int64_t i) const { return opt.ckpt_layers < 0 || i < opt.ckpt_layers; }

  LmConfig cfg;
  LmModelOptions opt;
  at::Tensor embed;  // [vocab, dim], also the output projection
  torch::nn::ModuleList blocks{nullptr};
  RMSNorm final_norm{nullptr};

 private:
  std::vector<std::shared_ptr<GraphedLayer>>
      graphs_;  // per block, created on first use (CUDA_GRAPHS)
};
TORCH_MODULE(LmModel);

}  // namespace sg::trainer
