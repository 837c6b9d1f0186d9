// Background loader: worker threads build host batches of the synthetic dataset, like a
// DataLoader with num_workers; batch k always holds the same samples whatever the
// worker count, and batches are handed out in order.
#pragma once

#include "trainer/workload/wam/data/synthetic_clips.hpp"

#include <torch/torch.h>

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace sg::trainer {

struct HostBatch {
  int64_t index = 0;
  std::vector<int64_t> sample_ids;
  std::vector<at::Tensor> frames;  // list collation: per sample [T, H, W, 3] uint8
  at::Tensor clip_u8;              // uint8 collation: [B, T, H, W, 3] (FAST_INPUT)
  at::Tensor actions;              // [B, Ta, Af] float32
  at::Tensor token_ids;            // [B, L] int64
  at::Tensor token_mask;           // [B, L] bool
};

struct LoaderOptions {
  int64_t batch_size = 1;
  int64_t workers = 1;         // 0: build batches on the calling thread
  bool collate_uint8 = false;  // one [B, T, H, W, 3] tensor instead of a list
  bool pin_memory = false;     // allocate host batches pinned (CUDA builds)
  int64_t first_sample = 0;    // sample id of batch 0's first sample
  int64_t batch_stride = 0;    // sample ids from batch k's first to batch k+1's (0: batch_size)
  int64_t prefetch = 2;        // batches in flight per worker
};

// Builds batch `index` (samples first_sample + index * stride ... + B - 1).
HostBatch build_batch(const SyntheticClips& data, const LoaderOptions& opt, int64_t index);

class ClipLoader {
 public:
  ClipLoader(const SyntheticClips& data, LoaderOptions opt);
  ~ClipLoader();
  ClipLoader(const ClipLoader&) = delete;
  ClipLoader& operator=(const ClipLoader&) = delete;

  // The next batch in order; rethrows a worker's exception.
  HostBatch next();

 private:
  void work();

  const SyntheticClips& data_;
  LoaderOptions opt_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<int64_t, HostBatch> ready_;
  int64_t next_to_build_ = 0;
  int64_t next_to_hand_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
  std::vector<std::thread> threads_;
};

}  // namespace sg::trainer
