// Did-you-mean for names a user typed (subcommands, flags, workloads, sizes, switches):
// the closest known names by edit distance, and the list of what exists. Header-only
// and dependency-free so that the trainer's command line uses the same rule.
#pragma once
#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

namespace sg {

// Levenshtein distance, case-insensitive (an adjacent swap counts 1: "trails"/"trials").
inline std::size_t edit_distance(const std::string& a, const std::string& b) {
  auto lower = [](char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  };
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) &&
          lower(a[i - 2]) == lower(b[j - 1])) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[n][m];
}

// The known names within max(1, size/3) edits of `word`, closest first (ties in the
// given order); empty when nothing is close.
inline std::vector<std::string> closest_names(const std::string& word,
                                              const std::vector<std::string>& names) {
  const std::size_t limit = std::max<std::size_t>(1, word.size() / 3);
  std::vector<std::pair<std::size_t, std::string>> near;
  for (const auto& n : names) {
    const std::size_t dist = edit_distance(word, n);
    if (dist <= limit && dist > 0) near.emplace_back(dist, n);
  }
  std::stable_sort(near.begin(), near.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (const auto& [dist, n] : near) {
    if (out.size() < 3) out.push_back(n);
  }
  return out;
}

// "a, b, c"
inline std::string join_names(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// "; did you mean 'tune'?" (or 'a' or 'b'), else ""; `prefix` is put before each name.
inline std::string did_you_mean(const std::string& word, const std::vector<std::string>& names,
                                const std::string& prefix = "") {
  const auto near = closest_names(word, names);
  if (near.empty()) return "";
  std::string s = "; did you mean ";
  for (std::size_t i = 0; i < near.size(); ++i) {
    s += (i == 0 ? "" : i + 1 == near.size() ? " or " : ", ") + ("'" + prefix + near[i] + "'");
  }
  return s + "?";
}

}  // namespace sg
