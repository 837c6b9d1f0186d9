// The lm workload's corpus: plain text that ships with every Debian system, read at run
// time — the license texts in /usr/share/common-licenses (package base-files). Files are
// read in sorted name order (symbolic links skipped: they alias other files); each
// paragraph (text between blank lines) is one document. SPEEDGATE_LM_CORPUS_DIR points
// at another directory of text files (tests use it to check the missing-corpus error).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sg::trainer {

constexpr const char* kDefaultCorpusDir = "/usr/share/common-licenses";

struct Corpus {
  std::string dir;
  std::vector<std::string> files;               // names, sorted
  std::vector<std::vector<int64_t>> documents;  // token ids, no end-of-document token
  int64_t tokens() const;
};

// The directory from SPEEDGATE_LM_CORPUS_DIR, else kDefaultCorpusDir.
std::string corpus_dir_from_environment();

// Throws BadInputError naming the directory when it is missing, unreadable or holds no
// text (the trainer exits 2).
Corpus load_corpus(const std::string& dir, int64_t vocab);

}  // namespace sg::trainer
