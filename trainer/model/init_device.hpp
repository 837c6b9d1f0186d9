// Where model parameters are created. A workload builds its modules inside a
// ParameterDeviceScope for the run device, so on CUDA every parameter is allocated and
// initialised on the GPU (drawn from the CUDA default generator, which torch::manual_seed
// seeds too) instead of by the single-threaded CPU generator and then copied over: built
// that way, wam base took 13-18 s of every ~16 s tuning trial. On the CPU nothing changes:
// the same calls draw the same values from the same generator. CUDA values for a seed
// therefore differ from CPU values for that seed (docs/workloads.md, "Model build").
#pragma once

#include <torch/torch.h>

namespace sg::trainer {

// RAII: parameters created while it lives go to `device`; the enclosing scope's device
// (the CPU outside any) comes back when it ends. Per thread.
class ParameterDeviceScope {
 public:
  explicit ParameterDeviceScope(c10::Device device);
  ~ParameterDeviceScope();
  ParameterDeviceScope(const ParameterDeviceScope&) = delete;
  ParameterDeviceScope& operator=(const ParameterDeviceScope&) = delete;

 private:
  c10::Device previous_;
};

// The device of the innermost live scope; the CPU outside any.
c10::Device parameter_device();

// Options for a new parameter: the default dtype on parameter_device(), i.e. what
// torch::empty / randn / ones use without options, moved to that device.
at::TensorOptions parameter_options();

// Throws std::logic_error naming the first parameter or buffer of `module` that is not
// on `device` (a module built outside the scope: it would crash at its first use).
void require_on_device(const torch::nn::Module& module, c10::Device device);

// Hands back to the driver the CUDA blocks the caching allocator holds but no tensor uses
// (build temporaries: fp32 frozen weights before their bf16 cast, SVD workspaces), so the
// reserved-memory peaks measured during training describe training only. CPU: no-op.
void release_cached_memory(c10::Device device);

}  // namespace sg::trainer
