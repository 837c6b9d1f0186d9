// Corpus loading (see corpus.hpp).
#include "trainer/workload/lm/corpus.hpp"

#include "trainer/errors.hpp"
#include "trainer/workload/lm/tokenizer.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace sg::trainer {
namespace {

namespace fs = std::filesystem;

constexpr const char* kHint =
    " (the lm corpus is the license texts of Debian's base-files package; "
    "set SPEEDGATE_LM_CORPUS_DIR to another directory of text files)";

bool blank(const std::string& line) {
  return line.find_first_not_of(" \t\r\f\v") == std::string::npos;
}

}  // namespace

int64_t Corpus::tokens() const {
  int64_t n = 0;
  for (const auto& d : documents) n += static_cast<int64_t>(d.size());
  return n;
}

std::string corpus_dir_from_environment() {
  const char* v = std::getenv("SPEEDGATE_LM_CORPUS_DIR");
  return v != nullptr && *v != '\0' ? std::string(v) : std::string(kDefaultCorpusDir);
}

Corpus load_corpus(const std::string& dir, int64_t vocab) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw BadInputError("lm corpus directory " + dir + " is missing" + kHint);
  Corpus c;
  c.dir = dir;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.is_symlink(ec) || !entry.is_regular_file(ec)) continue;
    c.files.push_back(entry.path().filename().string());
  }
  if (ec) throw BadInputError("lm corpus directory " + dir + " cannot be read: " + ec.message());
  std::sort(c.files.begin(), c.files.end());
  for (const auto& name : c.files) {
    std::ifstream in(fs::path(dir) / name);
    if (!in) throw BadInputError("lm corpus file " + dir + "/" + name + " cannot be read" + kHint);
    std::string line, paragraph;
    auto flush = [&] {
      auto ids = tokenize_words(paragraph, vocab);
      if (!ids.empty()) c.documents.push_back(std::move(ids));
      paragraph.clear();
    };
    while (std::getline(in, line)) {
      if (blank(line)) {
        flush();
      } else {
        paragraph += line;
        paragraph += '\n';
      }
    }
    flush();
  }
  if (c.documents.empty())
    throw BadInputError("lm corpus directory " + dir + " holds no text" + kHint);
  return c;
}

}  // namespace sg::trainer
