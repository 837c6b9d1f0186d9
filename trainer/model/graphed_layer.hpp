// Per-layer CUDA graphs (SG_CUDA_GRAPHS): the C++ counterpart of PyTorch's
// torch.cuda.make_graphed_callables, with the shape of checkpointed() (checkpoint.hpp).
// For each distinct call signature of a layer (input shapes, strides, dtypes,
// requires_grad, 256-byte alignment; autocast state) the first grad-mode call warms the
// body up on a side stream, captures a forward graph on static input buffers and a
// backward graph (autograd::grad of the static outputs w.r.t. the static inputs that
// need grad and the parameters, with static grad_output buffers) into one private memory
// pool per signature, and from then on replays them inside a custom autograd function:
// its forward copies the inputs into the static inputs, replays the forward graph and
// returns clones of the static outputs; its backward copies the incoming gradients into
// the static buffers, replays the backward graph and returns clones of the input and
// parameter gradients (one per input, summed inside the layer, as checkpointed() does).
// Everything a graph reads or writes stays allocated while its signature is cached, so
// graphs of different layers and signatures may replay in any order. Calls without grad
// mode (eval) run the body eagerly. CUDA builds only; see docs/switches.md CUDA_GRAPHS.
#pragma once

#include "trainer/model/checkpoint.hpp"

#include <cstddef>
#include <list>
#include <memory>
#include <string>

namespace sg::trainer {

struct CapturedLayer;  // one signature's graphs and static buffers (graphed_layer.cpp)

// The graph cache of one layer: at most max_signatures captured signatures, least
// recently used evicted (a device synchronisation, then its graphs and buffers freed).
class GraphedLayer {
 public:
  static constexpr size_t kDefaultMaxSignatures = 4;
  explicit GraphedLayer(std::string name, size_t max_signatures = kDefaultMaxSignatures);
  ~GraphedLayer();
  GraphedLayer(const GraphedLayer&) = delete;
  GraphedLayer& operator=(const GraphedLayer&) = delete;

  const std::string& name() const { return name_; }
  size_t cached() const { return entries_.size(); }
  // Signatures captured so far (including evicted ones).
  size_t captures() const { return captures_; }

 private:
  friend TensorList graphed(GraphedLayer& layer, CheckpointBody body, const TensorList& inputs,
                            const TensorList& params);
  std::string name_;
  size_t max_signatures_;
  size_t captures_ = 0;
  std::list<std::shared_ptr<CapturedLayer>> entries_;  // most recently used first
};

// Runs body(inputs) through the layer's CUDA graphs when grad mode is on (capturing on
// the first call of a signature), plainly otherwise. params: every tensor the body reads
// that needs a gradient but is not in inputs (the module parameters); they must keep
// their storage for the layer's lifetime (in-place optimizer updates are fine). The body
// must launch only on the current stream, never synchronise with the host and draw no
// random numbers. Inputs may be undefined, of any dtype, and must not overlap
// themselves (no expanded tensors). Throws std::logic_error on a build without CUDA or
// for inputs not on a CUDA device.
TensorList graphed(GraphedLayer& layer, CheckpointBody body, const TensorList& inputs,
                   const TensorList& params);

}  // namespace sg::trainer
