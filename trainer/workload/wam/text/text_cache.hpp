// Bounded LRU cache of text-encoder output rows keyed by a sample's token ids and mask
// (the bytes, not shapes or prompt strings: two prompts tokenising alike share a row).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <list>
#include <string>
#include <unordered_map>

namespace sg::trainer {

class TextCache {
 public:
  explicit TextCache(int64_t capacity) : capacity_(capacity) {}

  static std::string key(const at::Tensor& ids_row, const at::Tensor& mask_row);
  // The row, or an undefined tensor; a hit makes the row most recently used.
  at::Tensor find(const std::string& key);
  // Inserts (or refreshes) a row, evicting the least recently used beyond capacity.
  void insert(const std::string& key, const at::Tensor& row);

  int64_t size() const { return static_cast<int64_t>(index_.size()); }
  int64_t hits = 0, misses = 0, evictions = 0;

 private:
  using Entry = std::pair<std::string, at::Tensor>;
  int64_t capacity_;
  std::list<Entry> lru_;  // front: most recently used
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
};

}  // namespace sg::trainer
