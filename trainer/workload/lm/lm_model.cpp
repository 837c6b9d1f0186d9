// The lm model (see lm_model.hpp).
#include "trainer/workload/lm/lm_model.hpp"

#include "trainer/model/checkpoint.hpp"
#include "trainer/model/init_device.hpp"

namespace sg::trainer {

LmModelImpl::LmModelImpl(const LmConfig& c, LmModelOptions o) : cfg(c), opt(o) {
  embed = register_parameter("embed", torch::randn({c.vocab, c.dim}, parameter_options()) * 0.02);
  blocks = register_module("blocks", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.layers; ++i) blocks->push_back(LmBlock(c, o.osft));
  final_norm = register_module("final_norm", RMSNorm(c.dim, c.norm_eps));
}

at::Tensor LmModelImpl::forward(const at::Tensor& inputs, const at::Tensor& doc_ids) {
  const auto device = inputs.device();
  auto x = at::embedding(embed, inputs);
  const auto rope = rope1d_table(inputs.size(1), cfg.head_dim, cfg.rope_theta, device);
  auto mask = document_causal_mask(doc_ids);
  const AttnBackend backend = opt.backend;
  // The SDPA backends take an all-visible mask as none; attention() never reads a mask on
  // the host. A document-causal mask over L > 1 positions is never all-visible (position 0
  // does not see position 1), so the check needs no device read.
  if (backend != AttnBackend::kMath && inputs.size(1) == 1) mask = at::Tensor();
  if (opt.cuda_graphs && graphs_.empty()) {
    for (int64_t i = 0; i < cfg.layers; ++i)
      graphs_.push_back(std::make_shared<GraphedLayer>("lm." + std::to_string(i)));
  }
  for (int64_t i = 0; i < cfg.layers; ++i) {
    auto block = blocks->ptr<LmBlockImpl>(i);
    if (checkpoints_layer(i)) {
      auto body = [block, backend](const TensorList& in) -> TensorList {
        return {block->forward(in[0], in[1], in[2], backend)};
      };
      x = checkpointed(body, {x, rope, mask}, block->parameters())[0];
    } else if (opt.cuda_graphs) {
      auto body = [block, backend](const TensorList& in) -> TensorList {
        return {block->forward(in[0], in[1], in[2], backend)};
      };
      x = graphed(*graphs_[static_cast<size_t>(i)], body, {x, rope, mask}, block->parameters())[0];
    } else {
      x = block->forward(x, rope, mask, backend);
    }
  }
  return at::linear(final_norm(x), embed);
}

at::Tensor LmModelImpl::loss_sum(const LmBatch& batch) {
  auto logits = forward(batch.inputs, batch.doc_ids);
  auto ce = at::cross_entropy_loss(logits.reshape({-1, cfg.vocab}).to(at::kFloat),
                                   batch.targets.reshape({-1}),
                                   /*weight=*/{}, at::Reduction::None);
  return (ce * batch.loss_mask.reshape({-1}).to(at::kFloat)).sum();
}

}  // namespace sg::trainer
