// Per-layer CUDA graph capture and replay (see graphed_layer.hpp).
#include "trainer/model/graphed_layer.hpp"

#include "trainer/runtime/autocast.hpp"

#include <torch/version.h>

#include <iostream>
#include <stdexcept>

#if SPEEDGATE_WITH_CUDA && TORCH_VERSION_MAJOR >= 2
#define SG_GRAPHED_LAYERS 1
#include <ATen/MemoryOverlap.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGraphsC10Utils.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <mutex>
#else
#define SG_GRAPHED_LAYERS 0
#endif

namespace sg::trainer {

#if SG_GRAPHED_LAYERS

namespace {

// Warm-up iterations before capture, as make_graphed_callables (lazy kernel/handle
// initialisation, cuBLAS workspaces and cuDNN plans happen outside the capture).
constexpr int kWarmupIters = 3;
// Static inputs reproduce the caller's address modulo this, so kernels that pick a
// vectorised or aligned variant from the pointer see the same alignment as eagerly.
constexpr uintptr_t kAlignment = 256;

struct TensorSig {
  bool defined = false;
  std::vector<int64_t> sizes, strides;
  at::ScalarType dtype = at::kFloat;
  bool requires_grad = false;
  uintptr_t misalignment = 0;  // data_ptr % kAlignment
  bool operator==(const TensorSig& o) const {
    return defined == o.defined && sizes == o.sizes && strides == o.strides && dtype == o.dtype &&
           requires_grad == o.requires_grad && misalignment == o.misalignment;
  }
};

struct Signature {
  std::vector<TensorSig> inputs;
  bool autocast = false;
  at::ScalarType autocast_dtype = at::kBFloat16;
  bool operator==(const Signature& o) const {
    return inputs == o.inputs && autocast == o.autocast && autocast_dtype == o.autocast_dtype;
  }
};

TensorSig sig_of(const at::Tensor& t) {
  TensorSig s;
  s.defined = t.defined();
  if (!s.defined) return s;
  s.sizes = t.sizes().vec();
  s.strides = t.strides().vec();
  s.dtype = t.scalar_type();
  s.requires_grad = t.requires_grad();
  s.misalignment = reinterpret_cast<uintptr_t>(t.data_ptr()) % kAlignment;
  return s;
}

// A buffer with t's sizes, strides, dtype, device and address modulo kAlignment (the
// caching allocator hands out blocks aligned to at least 512 bytes).
at::Tensor static_like(const at::Tensor& t) {
  const auto item = static_cast<uintptr_t>(t.element_size());
  const uintptr_t mis = reinterpret_cast<uintptr_t>(t.data_ptr()) % kAlignment;
  const int64_t offset = static_cast<int64_t>(mis % item == 0 ? mis / item : 0);
  int64_t extent = t.numel() > 0 ? 1 : 0;
  for (int64_t d = 0; d < t.dim() && t.numel() > 0; ++d) extent += (t.size(d) - 1) * t.stride(d);
  auto flat = at::empty({extent + offset}, t.options().requires_grad(false));
  return flat.as_strided(t.sizes(), t.strides(), offset);
}

// A non-blocking stream per device used only for warm-up and capture (a pool stream
// could be shared with other work, which capture would then pick up).
c10::cuda::CUDAStream capture_stream(c10::DeviceIndex device) {
  static std::mutex mu;
  static std::map<c10::DeviceIndex, cudaStream_t> streams;
  std::lock_guard<std::mutex> lock(mu);
  auto it = streams.find(device);
  if (it == streams.end()) {
    c10::cuda::CUDAGuard guard(device);
    cudaStream_t s = nullptr;
    C10_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    it = streams.emplace(device, s).first;  // lives as long as the process
  }
  return c10::cuda::getStreamFromExternal(it->second, device);
}

// Restores the autocast cache flag on scope exit.
class AutocastCacheOff {
 public:
  AutocastCacheOff() : was_(at::autocast::is_autocast_cache_enabled()) {
    at::autocast::set_autocast_cache_enabled(false);
  }
  ~AutocastCacheOff() { at::autocast::set_autocast_cache_enabled(was_); }
  AutocastCacheOff(const AutocastCacheOff&) = delete;
  AutocastCacheOff& operator=(const AutocastCacheOff&) = delete;

 private:
  bool was_;
};

}  // namespace

struct CapturedLayer {
  Signature sig;
  std::unique_ptr<at::cuda::CUDAGraph> fwd, bwd;
  TensorList static_inputs;          // one per input; undefined where the input is
  TensorList static_outputs;         // the body's outputs (graph pool); hold the autograd graph
  std::vector<bool> differentiable;  // per output: requires grad
  TensorList static_grad_outputs;    // per output; undefined when not differentiable
  std::vector<size_t> grad_slots;    // inputs that receive a gradient
  TensorList static_grads;           // grad_slots' gradients, then the parameters'
  size_t num_params = 0;
};

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct CapturedHolder : torch::CustomClassHolder {
  std::shared_ptr<CapturedLayer> captured;
};

// c's static inputs, copies of `inputs`, and the slots of those that receive a gradient.
// Static inputs live in the ordinary allocator on the main stream (the replays use them there).
void set_static_inputs(CapturedLayer& c, const TensorList& inputs) {
  for (const auto& t : inputs) {
    if (!t.defined()) {
      c.static_inputs.emplace_back();
      continue;
    }
    auto s = static_like(t).detach();  // a leaf of its own, not a view of the flat buffer
    s.copy_(t.detach());
    if (t.requires_grad()) s.requires_grad_(true);
    c.static_inputs.push_back(s);
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].defined() && inputs[i].requires_grad()) c.grad_slots.push_back(i);
  }
}

// Warm-up, forward capture and backward capture of one signature (make_graphed_callables'
// order for one callable). Runs on the capture stream, ordered after the current stream.
std::shared_ptr<CapturedLayer> capture(const CheckpointBody& body, const TensorList& inputs,
                                       const TensorList& params, Signature sig) {
  auto c = std::make_shared<CapturedLayer>();
  c->sig = std::move(sig);
  c->num_params = params.size();
  c10::DeviceIndex device = -1;
  for (const auto& t : inputs) {
    if (t.defined()) device = t.device().index();
  }
  c10::cuda::CUDAGuard device_guard(device);
  auto main = c10::cuda::getCurrentCUDAStream(device);
  set_static_inputs(*c, inputs);
  TensorList targets;
  for (size_t i : c->grad_slots) targets.push_back(c->static_inputs[i]);
  for (const auto& p : params) targets.push_back(p);

  const AutocastState autocast = current_autocast_state();
  // The eager backward runs after the forward's autocast scope has closed.
  const AutocastState backward_autocast{false, autocast.dtype};
  auto side = capture_stream(device);
  at::cuda::CUDAEvent ready;
  ready.record(main);
  ready.block(side);
  {
    c10::cuda::CUDAStreamGuard stream_guard(side);
    AutocastCacheOff no_cache;  // a cached cast would be a tensor outside the graph
    torch::AutoGradMode grad_on(true);
    auto differentiate = [&](const TensorList& outs, const TensorList& grad_outs) {
      TensorList o, g;
      for (size_t i = 0; i < outs.size(); ++i) {
        if (outs[i].defined() && outs[i].requires_grad())
          o.push_back(outs[i]), g.push_back(grad_outs[i]);
      }
      AutocastScope scope(backward_autocast);
      if (o.empty() || targets.empty()) return TensorList(targets.size());
      return torch::autograd::grad(o, targets, g, /*retain_graph=*/true, /*create_graph=*/false,
                                   /*allow_unused=*/true);
    };
    for (int it = 0; it < kWarmupIters; ++it) {
      TensorList outs = body(c->static_inputs);
      TensorList grad_outs;
      for (const auto& o : outs)
        grad_outs.push_back(o.defined() ? at::zeros_like(o) : at::Tensor());
      (void)differentiate(outs, grad_outs);
    }
    c10::cuda::device_synchronize();

    c->fwd = std::make_unique<at::cuda::CUDAGraph>();
    // Thread-local capture: loader threads may allocate pinned memory meanwhile.
    c->fwd->capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
    c->static_outputs = body(c->static_inputs);
    c->fwd->capture_end();

    for (const auto& o : c->static_outputs) {
      const bool diff = o.defined() && o.requires_grad();
      c->differentiable.push_back(diff);
      c->static_grad_outputs.push_back(diff ? at::zeros_like(o) : at::Tensor());
    }
    c->bwd = std::make_unique<at::cuda::CUDAGraph>();
    c->bwd->capture_begin(c->fwd->pool(), cudaStreamCaptureModeThreadLocal);
    // retain_graph: the saved activations stay allocated (the forward graph writes them,
    // the backward graph reads them), so no later capture can place anything there.
    c->static_grads = differentiate(c->static_outputs, c->static_grad_outputs);
    c->bwd->capture_end();
  }
  at::cuda::CUDAEvent done;
  done.record(side);
  done.block(main);
  return c;
}

class GraphedFunction : public torch::autograd::Function<GraphedFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, c10::intrusive_ptr<CapturedHolder> holder,
                               at::TensorList input_list, at::TensorList param_list) {
    (void)param_list;  // read by the graph in place; listed so their gradients flow
    CapturedLayer& c = *holder->captured;
    for (size_t i = 0; i < input_list.size(); ++i) {
      if (c.static_inputs[i].defined()) c.static_inputs[i].detach().copy_(input_list[i]);
    }
    c.fwd->replay();
    variable_list out;
    std::vector<at::Tensor> constant;
    for (size_t i = 0; i < c.static_outputs.size(); ++i) {
      // A clone: the next replay overwrites the static output.
      out.push_back(c.static_outputs[i].defined() ? c.static_outputs[i].detach().clone()
                                                  : at::Tensor());
      if (!c.differentiable[i] && out.back().defined()) constant.push_back(out.back());
    }
    if (!constant.empty()) ctx->mark_non_differentiable(constant);
    ctx->saved_data["captured"] = c10::IValue::make_capsule(holder);
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    auto holder =
        c10::static_intrusive_pointer_cast<CapturedHolder>(ctx->saved_data["captured"].toCapsule());
    CapturedLayer& c = *holder->captured;
    for (size_t i = 0; i < c.static_grad_outputs.size(); ++i) {
      if (!c.differentiable[i]) continue;
      if (grad_outputs[i].defined()) {
        c.static_grad_outputs[i].copy_(grad_outputs[i]);
      } else {
        c.static_grad_outputs[i].zero_();
      }
    }
    c.bwd->replay();
    const size_t n_inputs = c.static_inputs.size();
    // One gradient per forward argument: the holder, every input, every parameter.
    variable_list result(1 + n_inputs + c.num_params);
    auto take = [](const at::Tensor& g) { return g.defined() ? g.clone() : at::Tensor(); };
    for (size_t j = 0; j < c.grad_slots.size(); ++j)
      result[1 + c.grad_slots[j]] = take(c.static_grads[j]);
    for (size_t j = 0; j < c.num_params; ++j)
      result[1 + n_inputs + j] = take(c.static_grads[c.grad_slots.size() + j]);
    return result;
  }
};

}  // namespace

GraphedLayer::GraphedLayer(std::string name, size_t max_signatures)
    : name_(std::move(name)), max_signatures_(max_signatures < 1 ? 1 : max_signatures) {}

GraphedLayer::~GraphedLayer() {
  // Replays may still be in flight on the stream; never throw from here.
  if (!entries_.empty()) (void)cudaDeviceSynchronize();
}

TensorList graphed(GraphedLayer& layer, CheckpointBody body, const TensorList& inputs,
                   const TensorList& all_params) {
  if (!torch::GradMode::is_enabled()) return body(inputs);
  // Frozen parameters are read by the graphs like any constant; only trainable ones get gradients.
  TensorList params;
  for (const auto& p : all_params) {
    if (p.requires_grad()) params.push_back(p);
  }
  Signature sig;
  for (const auto& t : inputs) {
    if (t.defined() && !t.is_cuda()) {
      throw std::logic_error("CUDA_GRAPHS: layer " + layer.name() +
                             " got an input that is not on a CUDA device");
    }
    if (t.defined() && at::has_internal_overlap(t) == at::MemOverlap::Yes) {
      throw std::logic_error("CUDA_GRAPHS: layer " + layer.name() +
                             " got a self-overlapping (expanded) input, which has no static copy");
    }
    sig.inputs.push_back(sig_of(t));
  }
  const AutocastState ac = current_autocast_state();
  sig.autocast = ac.enabled;
  sig.autocast_dtype = ac.dtype;

  // The signature above keeps which slots are undefined; the graphs and the autograd
  // function see only the defined inputs (checkpoint.hpp, defined_inputs).
  const DefinedInputs defined = defined_inputs(std::move(body), inputs);
  std::shared_ptr<CapturedLayer> hit;
  for (auto it = layer.entries_.begin(); it != layer.entries_.end(); ++it) {
    if ((*it)->sig == sig) {
      hit = *it;
      layer.entries_.splice(layer.entries_.begin(), layer.entries_, it);  // most recently used
      break;
    }
  }
  if (!hit) {
    if (layer.entries_.size() >= layer.max_signatures_) {
      c10::cuda::device_synchronize();  // no replay of the evicted graphs may be in flight
      layer.entries_.pop_back();
    }
    hit = capture(defined.body, defined.tensors, params, std::move(sig));
    layer.entries_.push_front(hit);
    ++layer.captures_;
    std::cerr << "speedgate-train: CUDA_GRAPHS captured " << layer.name() << " (shape "
              << layer.captures_ << ", " << layer.entries_.size() << " cached)\n";
  }
  auto holder = c10::make_intrusive<CapturedHolder>();
  holder->captured = hit;
  return GraphedFunction::apply(holder, at::TensorList(defined.tensors), at::TensorList(params));
}

#else  // no CUDA graphs in this build

struct CapturedLayer {};

GraphedLayer::GraphedLayer(std::string name, size_t max_signatures)
    : name_(std::move(name)), max_signatures_(max_signatures) {}

GraphedLayer::~GraphedLayer() = default;

TensorList graphed(GraphedLayer& layer, CheckpointBody body, const TensorList& inputs,
                   const TensorList&) {
  if (!torch::GradMode::is_enabled()) return body(inputs);  // as on a CUDA build
  throw std::logic_error("CUDA_GRAPHS: layer " + layer.name() +
                         ": this build has no CUDA graphs (needs a CUDA build with LibTorch >= 2)");
}

#endif

}  // namespace sg::trainer
