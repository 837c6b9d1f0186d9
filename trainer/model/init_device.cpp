// Parameter device scope (see init_device.hpp).
#include "trainer/model/init_device.hpp"

#include <stdexcept>
#include <string>

#if SPEEDGATE_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace sg::trainer {
namespace {

c10::Device& current_device() {
  thread_local c10::Device device(c10::kCPU);
  return device;
}

}  // namespace

ParameterDeviceScope::ParameterDeviceScope(c10::Device device) : previous_(current_device()) {
  current_device() = device;
}

ParameterDeviceScope::~ParameterDeviceScope() { current_device() = previous_; }

c10::Device parameter_device() { return current_device(); }

at::TensorOptions parameter_options() { return at::TensorOptions().device(current_device()); }

void require_on_device(const torch::nn::Module& module, c10::Device device) {
  auto check = [&](const std::string& kind, const std::string& name, const at::Tensor& t) {
    if (t.defined() && t.device() != device) {
      throw std::logic_error(kind + " " + name + " of " + module.name() + " is on " +
                             t.device().str() + ", not on the run device " + device.str() +
                             " (built outside a ParameterDeviceScope)");
    }
  };
  for (const auto& p : module.named_parameters()) check("parameter", p.key(), p.value());
  for (const auto& b : module.named_buffers()) check("buffer", b.key(), b.value());
}

void release_cached_memory(c10::Device device) {
#if SPEEDGATE_WITH_CUDA
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::emptyCache();
#endif
  (void)device;
}

}  // namespace sg::trainer
