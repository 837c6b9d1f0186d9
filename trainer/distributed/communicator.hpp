// The collectives a data-parallel run needs, over c10d: rendezvous through a TCPStore on
// MASTER_ADDR:MASTER_PORT (rank 0 hosts it), then ProcessGroupNCCL on CUDA or
// ProcessGroupGloo on the CPU. c10d's headers stay inside communicator.cpp, so the rest of
// the trainer (and every workload loop) sees only this small interface.
//
// Contract: every rank calls the collectives in the same order with tensors of the same
// shape and dtype (c10d matches calls by order). Tensors live on the run's device. Any
// collective or store operation that cannot complete within the launch timeout (a peer
// died or hangs) throws; NCCL's watchdog additionally aborts the process.
#pragma once

#include "trainer/distributed/launch_env.hpp"

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace sg::trainer {

class Communicator {
 public:
  // Completes an asynchronous collective (blocks; on CUDA, orders the current stream
  // after it). Throws when the collective failed.
  using Wait = std::function<void()>;

  // Rendezvous of env.world_size ranks. REQUIRES: env.distributed(); on CUDA the current
  // device is already the rank's. Throws BadInputError when this build has no backend
  // for `device`, std::runtime_error when the rendezvous fails or times out.
  static std::shared_ptr<Communicator> connect(const LaunchEnv& env, c10::Device device);

  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  const char* backend_name() const;

  // In-place elementwise sum over ranks, started now (Gloo: on its worker threads; NCCL:
  // on its own stream, after the work queued so far on the current stream).
  Wait all_reduce_sum_async(const at::Tensor& t);
  void all_reduce_sum(const at::Tensor& t) { all_reduce_sum_async(t)(); }
  // In place: every rank ends with root's values.
  void broadcast(const at::Tensor& t, int root);
  // Mean over ranks of one float (summed in float32, then divided by the world size).
  float mean(float value);
  // Rank 0 gets every rank's string in rank order; other ranks get {}. Through the store.
  std::vector<std::string> gather_to_root(const std::string& value);

 private:
  struct Impl;
  explicit Communicator(std::unique_ptr<Impl> impl, int rank, int world_size);
  std::unique_ptr<Impl> impl_;
  int rank_ = 0;
  int world_size_ = 1;
  int64_t gather_seq_ = 0;
};

// The helpers below take a null comm as world size 1.
// gather_to_root, or {value}.
std::vector<std::string> gather_to_root(Communicator* comm, const std::string& value);
// gather_to_root of an integer, or {value}.
std::vector<int64_t> gather_int_to_root(Communicator* comm, int64_t value);
// Communicator::mean, or value.
float global_mean(Communicator* comm, float value);

}  // namespace sg::trainer
