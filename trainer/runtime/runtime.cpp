// Runtime setup and fingerprint (see runtime.hpp).
#include "trainer/runtime/runtime.hpp"

#include "speedgate_build_info.hpp"
#include "trainer/distributed/communicator.hpp"
#include "trainer/errors.hpp"

#include <torch/torch.h>
#include <torch/version.h>

#include <sched.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#if SPEEDGATE_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/cuda/CUDAFunctions.h>
#include <cuda_runtime_api.h>
#endif

namespace sg::trainer {
namespace {

std::string cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto pos = line.find(':');
      return pos == std::string::npos ? line : line.substr(pos + 2);
    }
  }
  return "cpu";
}

#if SPEEDGATE_WITH_CUDA
// Binds this process to the cores in the GPU's /sys/bus/pci/devices/<bus id>/local_cpulist
// (e.g. "0-15,32-47"). Throws std::runtime_error when the list cannot be read.
void bind_to_gpu_numa_node(int device) {
  char bus[32] = {0};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, device) != cudaSuccess)
    throw std::runtime_error("cudaDeviceGetPCIBusId failed");
  std::string id(bus);
  for (auto& ch : id) ch = static_cast<char>(std::tolower(ch));
  std::ifstream in("/sys/bus/pci/devices/" + id + "/local_cpulist");
  std::string list;
  if (!std::getline(in, list) || list.empty())
    throw std::runtime_error("no local_cpulist for GPU " + id);
  cpu_set_t set;
  CPU_ZERO(&set);
  std::stringstream ss(list);
  std::string range;
  while (std::getline(ss, range, ',')) {
    const auto dash = range.find('-');
    const int lo = std::stoi(range.substr(0, dash));
    const int hi = dash == std::string::npos ? lo : std::stoi(range.substr(dash + 1));
    for (int c = lo; c <= hi; ++c) CPU_SET(c, &set);
  }
  if (sched_setaffinity(0, sizeof set, &set) != 0)
    throw std::runtime_error("sched_setaffinity failed");
}
#endif

}  // namespace

bool is_out_of_memory(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) return true;
  const std::string what = e.what();
  return what.find("out of memory") != std::string::npos ||
         what.find("OutOfMemory") != std::string::npos ||
         what.find("DefaultCPUAllocator: can't allocate memory") != std::string::npos;
}

Runtime setup_runtime(int threads, const Switches& sw) {
  Runtime rt;
  rt.launch = launch_env_from_process();
  rt.rank = rt.launch.rank;
  rt.world_size = rt.launch.world_size;
  rt.local_rank = rt.launch.local_rank;
  if (threads < 1) throw BadInputError("--threads must be >= 1");
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  const int host_cpus = ::sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 0;
  if (host_cpus > 0 && threads > host_cpus) {
    throw BadInputError("--threads " + std::to_string(threads) + " is more than the " +
                        std::to_string(host_cpus) + " CPUs this process may run on");
  }
  rt.threads = threads;
  // Before any CUDA initialisation: cuBLAS determinism and allocator settings.
  setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
  if (sw.alloc_expandable)
    setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True", /*overwrite=*/1);
  at::set_num_threads(threads);
  at::set_num_interop_threads(1);
  rt.deterministic = !sw.nondeterministic;
  at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/sw.nondeterministic);
  at::globalContext().setBenchmarkCuDNN(false);
  at::globalContext().setDeterministicCuDNN(true);
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
  // NO_UNINIT_FILL: the same computation without deterministic mode's NaN fill of new tensors.
  at::globalContext().setDeterministicFillUninitializedMemory(!sw.no_uninit_fill);
#endif
#if SPEEDGATE_WITH_CUDA
  if (torch::cuda::is_available()) {
    if (rt.local_rank >= static_cast<int>(torch::cuda::device_count())) {
      throw BadInputError("LOCAL_RANK=" + std::to_string(rt.local_rank) + " but only " +
                          std::to_string(torch::cuda::device_count()) + " GPU(s) are visible");
    }
    rt.device = c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(rt.local_rank));
    c10::cuda::set_device(static_cast<c10::DeviceIndex>(rt.local_rank));
    if (sw.numa_bind) bind_to_gpu_numa_node(rt.local_rank);
  }
#endif
  return rt;
}

void connect_distributed(Runtime& rt) {
  if (rt.launch.distributed()) rt.comm = Communicator::connect(rt.launch, rt.device);
}

nlohmann::json fingerprint(const Runtime& rt) {
  nlohmann::json fp;
  fp["device"] = rt.device.is_cuda() ? "cuda" : "cpu";
  fp["device_name"] = cpu_name();
  fp["sm_count"] = 0;
  fp["driver"] = "";
  fp["cuda"] = "";
  fp["cudnn"] = "";
  fp["nccl"] = "";
#if SPEEDGATE_WITH_CUDA
  if (rt.device.is_cuda()) {
    const auto* prop = at::cuda::getCurrentDeviceProperties();
    fp["device_name"] = prop->name;
    fp["sm_count"] = prop->multiProcessorCount;
    fp["compute_capability"] = std::to_string(prop->major) + "." + std::to_string(prop->minor);
    int driver = 0;
    cudaDriverGetVersion(&driver);
    fp["driver"] = std::to_string(driver);
    fp["cuda"] = std::to_string(CUDA_VERSION);
    fp["cudnn"] = std::to_string(at::detail::getCUDAHooks().versionCuDNN());
  }
#endif
  fp["torch"] = TORCH_VERSION;
  fp["git_sha"] = SPEEDGATE_GIT_SHA;
  fp["threads"] = rt.threads;
  fp["deterministic"] = rt.deterministic;
  fp["world_size"] = rt.world_size;
  fp["dist_backend"] = rt.comm ? rt.comm->backend_name() : "";
  return fp;
}

}  // namespace sg::trainer
