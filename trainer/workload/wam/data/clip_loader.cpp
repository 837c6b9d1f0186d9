// Background loader (see clip_loader.hpp).
#include "trainer/workload/wam/data/clip_loader.hpp"

#include <cstring>

namespace sg::trainer {

HostBatch build_batch(const SyntheticClips& data, const LoaderOptions& opt, int64_t index) {
  const auto& c = data.config();
  const int64_t b = opt.batch_size;
  auto host = at::TensorOptions().pinned_memory(opt.pin_memory);
  HostBatch batch;
  batch.index = index;
  batch.actions = at::empty({b, c.action_tokens, c.action_features}, host.dtype(at::kFloat));
  batch.token_ids = at::empty({b, c.text_len}, host.dtype(at::kLong));
  batch.token_mask = at::empty({b, c.text_len}, host.dtype(at::kBool));
  if (opt.collate_uint8)
    batch.clip_u8 = at::empty({b, c.frames, c.height, c.width, 3}, host.dtype(at::kByte));
  for (int64_t i = 0; i < b; ++i) {
    const int64_t id = opt.first_sample + index * (opt.batch_stride > 0 ? opt.batch_stride : b) + i;
    batch.sample_ids.push_back(id);
    uint8_t* frames = nullptr;
    if (opt.collate_uint8) {
      frames = batch.clip_u8.data_ptr<uint8_t>() + i * data.frame_bytes();
    } else {
      batch.frames.push_back(at::empty({c.frames, c.height, c.width, 3}, at::kByte));
      frames = batch.frames.back().data_ptr<uint8_t>();
    }
    data.make(id, frames,
              batch.actions.data_ptr<float>() + i * c.action_tokens * c.action_features);
    data.tokenize(SyntheticClips::prompt(data.prompt_id(id)),
                  batch.token_ids.data_ptr<int64_t>() + i * c.text_len,
                  batch.token_mask.data_ptr<bool>() + i * c.text_len);
  }
  return batch;
}

ClipLoader::ClipLoader(const SyntheticClips& data, LoaderOptions opt) : data_(data), opt_(opt) {
  for (int64_t i = 0; i < opt_.workers; ++i) threads_.emplace_back([this] { work(); });
}

ClipLoader::~ClipLoader() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void ClipLoader::work() {
  const int64_t window = std::max<int64_t>(1, opt_.workers * opt_.prefetch);
  while (true) {
    int64_t index = 0;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || next_to_build_ < next_to_hand_ + window; });
      if (stop_) return;
      index = next_to_build_++;
    }
    HostBatch batch;
    try {
      batch = build_batch(data_, opt_, index);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      error_ = std::current_exception();
      cv_.notify_all();
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      ready_.emplace(index, std::move(batch));
    }
    cv_.notify_all();
  }
}

HostBatch ClipLoader::next() {
  if (threads_.empty()) return build_batch(data_, opt_, next_to_hand_++);
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return error_ != nullptr || ready_.count(next_to_hand_) > 0; });
  if (error_) std::rethrow_exception(error_);
  auto node = ready_.extract(next_to_hand_);
  ++next_to_hand_;
  lock.unlock();
  cv_.notify_all();
  return std::move(node.mapped());
}

}  // namespace sg::trainer
