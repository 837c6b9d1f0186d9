// LRU text cache (see text_cache.hpp).
#include "trainer/workload/wam/text/text_cache.hpp"

namespace sg::trainer {

std::string TextCache::key(const at::Tensor& ids_row, const at::Tensor& mask_row) {
  auto ids = ids_row.contiguous();
  auto mask = mask_row.contiguous();
  std::string k(reinterpret_cast<const char*>(ids.data_ptr()), ids.numel() * ids.element_size());
  k.append(reinterpret_cast<const char*>(mask.data_ptr()), mask.numel() * mask.element_size());
  return k;
}

at::Tensor TextCache::find(const std::string& key) {
  auto it = index_.find(key);
  if (it == index_.end()) {
    ++misses;
    return {};
  }
  ++hits;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->second;
}

void TextCache::insert(const std::string& key, const at::Tensor& row) {
  auto it = index_.find(key);
  if (it != index_.end()) {
    it->second->second = row;
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  lru_.emplace_front(key, row);
  index_[key] = lru_.begin();
  while (static_cast<int64_t>(index_.size()) > capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
    ++evictions;
  }
}

}  // namespace sg::trainer
