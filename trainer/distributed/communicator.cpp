// c10d rendezvous and collectives (see communicator.hpp).
#include "trainer/distributed/communicator.hpp"

#include "trainer/errors.hpp"

#include <torch/torch.h>
#include <torch/version.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#ifdef SPEEDGATE_C10D_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#if SPEEDGATE_WITH_CUDA
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <chrono>
#include <cstdlib>

namespace sg::trainer {
namespace {

// LibTorch 2 splits ProcessGroup into a frontend and per-device Backends (Gloo, NCCL);
// 1.13's ProcessGroupGloo/NCCL are ProcessGroups themselves. Both have the same calls.
#if TORCH_VERSION_MAJOR >= 2
using BackendPtr = c10::intrusive_ptr<c10d::Backend>;
#else
using BackendPtr = c10::intrusive_ptr<c10d::ProcessGroup>;
#endif

bool is_loopback(const std::string& addr) {
  return addr == "localhost" || addr.rfind("127.", 0) == 0 || addr == "::1";
}

#ifdef SPEEDGATE_C10D_GLOO
BackendPtr make_gloo(const c10::intrusive_ptr<c10d::Store>& store, const LaunchEnv& env,
                     std::chrono::milliseconds timeout) {
  auto opts = c10d::ProcessGroupGloo::Options::create(timeout);
  // The interface Gloo's pairs bind: GLOO_SOCKET_IFNAME as in PyTorch, loopback for a
  // single-host run on 127.0.0.1, else the address this host's name resolves to.
  const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
  if (ifname != nullptr && *ifname != '\0') {
    opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
  } else if (is_loopback(env.master_addr)) {
    opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  } else {
    opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  }
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, env.rank, env.world_size, opts);
}
#endif

#if SPEEDGATE_WITH_CUDA
BackendPtr make_nccl(const c10::intrusive_ptr<c10d::Store>& store, const LaunchEnv& env,
                     std::chrono::milliseconds timeout) {
  auto opts = c10d::ProcessGroupNCCL::Options::create();
  opts->timeout = timeout;
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, env.rank, env.world_size, opts);
}
#endif

}  // namespace

struct Communicator::Impl {
  c10::intrusive_ptr<c10d::Store> store;  // the TCPStore itself; gathers use "sg/" keys
  BackendPtr pg;
  c10::Device device{c10::kCPU};
  std::string backend;
};

std::shared_ptr<Communicator> Communicator::connect(const LaunchEnv& env, c10::Device device) {
  const std::chrono::milliseconds timeout(int64_t{env.timeout_s} * 1000);
  auto impl = std::make_unique<Impl>();
  impl->device = device;
#if !SPEEDGATE_WITH_CUDA
  if (device.is_cuda()) throw BadInputError("distributed CUDA runs need a CUDA build (NCCL)");
#endif
#ifndef SPEEDGATE_C10D_GLOO
  if (!device.is_cuda()) {
    throw BadInputError(
        "this build has no Gloo backend for distributed CPU runs (the Debian LibTorch build has "
        "it; "
        "a CUDA build runs distributed only on GPUs, with NCCL)");
  }
#endif
  c10d::TCPStoreOptions so;
  so.port = static_cast<std::uint16_t>(env.master_port);
  so.isServer = env.rank == 0;
  so.numWorkers = static_cast<std::size_t>(env.world_size);
  so.waitWorkers = true;
  so.timeout = timeout;
  impl->store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, so);
  auto pg_store = c10::make_intrusive<c10d::PrefixStore>("sg_pg", impl->store);
#if SPEEDGATE_WITH_CUDA
  if (device.is_cuda()) {
    impl->pg = make_nccl(pg_store, env, timeout);
    impl->backend = "nccl";
  }
#endif
#ifdef SPEEDGATE_C10D_GLOO
  if (!device.is_cuda()) {
    impl->pg = make_gloo(pg_store, env, timeout);
    impl->backend = "gloo";
  }
#endif
  return std::shared_ptr<Communicator>(new Communicator(std::move(impl), env.rank, env.world_size));
}

Communicator::Communicator(std::unique_ptr<Impl> impl, int rank, int world_size)
    : impl_(std::move(impl)), rank_(rank), world_size_(world_size) {}

Communicator::~Communicator() {
#if SPEEDGATE_WITH_CUDA && TORCH_VERSION_MAJOR >= 2
  // NCCL communicators must be torn down explicitly in LibTorch 2 (else a warning and,
  // after a failed peer, a possible hang in the destructor).
  try {
    if (impl_->backend == "nccl") impl_->pg->shutdown();
  } catch (const std::exception&) {
  }
#endif
}

const char* Communicator::backend_name() const { return impl_->backend.c_str(); }

Communicator::Wait Communicator::all_reduce_sum_async(const at::Tensor& t) {
  std::vector<at::Tensor> ts{t};
  c10d::AllreduceOptions opts;
  opts.reduceOp = c10d::ReduceOp::SUM;
  auto work = impl_->pg->allreduce(ts, opts);
  return [work] { work->wait(); };
}

void Communicator::broadcast(const at::Tensor& t, int root) {
  std::vector<at::Tensor> ts{t};
  c10d::BroadcastOptions opts;
  opts.rootRank = root;
  impl_->pg->broadcast(ts, opts)->wait();
}

float Communicator::mean(float value) {
  at::Tensor t = at::full({1}, value, at::TensorOptions().dtype(at::kFloat).device(impl_->device));
  all_reduce_sum(t);
  return (t.to(at::kCPU) / static_cast<double>(world_size_)).item<float>();
}

std::vector<std::string> Communicator::gather_to_root(const std::string& value) {
  const std::string prefix = "sg/gather/" + std::to_string(gather_seq_++) + "/";
  impl_->store->set(prefix + std::to_string(rank_),
                    std::vector<uint8_t>(value.begin(), value.end()));
  std::vector<std::string> out;
  if (rank_ != 0) return out;
  for (int r = 0; r < world_size_; ++r) {
    const auto bytes = impl_->store->get(prefix + std::to_string(r));
    out.emplace_back(bytes.begin(), bytes.end());
  }
  return out;
}

std::vector<std::string> gather_to_root(Communicator* comm, const std::string& value) {
  if (comm == nullptr) return {value};
  return comm->gather_to_root(value);
}

std::vector<int64_t> gather_int_to_root(Communicator* comm, int64_t value) {
  std::vector<int64_t> out;
  for (const auto& s : gather_to_root(comm, std::to_string(value))) out.push_back(std::stoll(s));
  return out;
}

float global_mean(Communicator* comm, float value) {
  return comm == nullptr ? value : comm->mean(value);
}

}  // namespace sg::trainer
