// Word-hashing tokenizer (see tokenizer.hpp).
#include "trainer/workload/lm/tokenizer.hpp"

#include <cctype>

namespace sg::trainer {
namespace {

int64_t hash_id(const std::string& token, int64_t vocab) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : token) h = (h ^ c) * 0x100000001b3ULL;
  return kFirstWordId + static_cast<int64_t>(h % static_cast<uint64_t>(vocab - kFirstWordId));
}

bool word_char(unsigned char c) { return std::isalnum(c) != 0 || c == '\'' || c >= 0x80; }

}  // namespace

std::vector<int64_t> tokenize_words(const std::string& text, int64_t vocab) {
  std::vector<int64_t> ids;
  std::string word;
  auto flush = [&] {
    if (!word.empty()) ids.push_back(hash_id(word, vocab));
    word.clear();
  };
  for (unsigned char c : text) {
    if (word_char(c)) {
      word.push_back(static_cast<char>(c));
      continue;
    }
    flush();
    if (std::isspace(c) == 0) ids.push_back(hash_id(std::string(1, static_cast<char>(c)), vocab));
  }
  flush();
  return ids;
}

}  // namespace sg::trainer
