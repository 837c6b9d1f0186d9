// Data-parallel gradient averaging in buckets, workload-independent (it takes the list of
// trainable parameters).
//
// Bucket plan (deterministic): parameters in reverse registration order — roughly the
// order backward produces their gradients — packed greedily into buckets of at most
// BUCKET_MB MiB (a parameter larger than that gets a bucket of its own; a dtype change
// starts a new bucket). Each bucket is one flat buffer, all-reduced (sum) as a unit, then
// divided by the world size in one fixed place (after the sum, before the gradients are
// written back), so overlapped and non-overlapped runs compute the same bits.
//
// Overlap (OVERLAP_COMM=1): a post hook on each parameter's gradient accumulator counts
// ready gradients during the last micro-batch's backward; as soon as a bucket and every
// bucket before it are complete, it is packed and its all-reduce starts (Gloo: worker
// threads; NCCL: its own stream) while backward continues. Buckets start strictly in
// index order so every rank issues the same collectives in the same order.
//
// With a null communicator (world size 1) every call is a no-op.
// REQUIRES: every rank produces gradients for the same parameters (same graph); a
// parameter without a gradient contributes zeros to its bucket and keeps no gradient.
#pragma once

#include "trainer/distributed/communicator.hpp"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace sg::trainer {

struct BucketPlan {
  std::vector<std::vector<size_t>> buckets;  // parameter indices, in packing order
};

// bucket_bytes 0: one bucket per parameter. dtypes[i] identifies parameter i's element type.
BucketPlan plan_buckets(const std::vector<int64_t>& param_bytes, const std::vector<int>& dtypes,
                        int64_t bucket_bytes);

class GradientReducer {
 public:
  GradientReducer(std::vector<at::Tensor> params, Communicator* comm, int64_t bucket_bytes,
                  bool overlap);
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  // Call before each micro-batch's backward; `last` marks the micro-batch after which
  // gradients are complete (overlap launches only then).
  void begin_backward(bool last);
  // After the last backward: starts the buckets not yet started (in order), waits for all,
  // divides by the world size and writes the averages into the parameters' gradients.
  void finish();

  const BucketPlan& plan() const;
  // Bucket all-reduces started from a backward hook (overlapped) so far; 0 without overlap.
  int64_t started_in_backward() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
  std::vector<std::shared_ptr<void>> accumulators_;  // keep the hooked grad accumulators alive
};

}  // namespace sg::trainer
