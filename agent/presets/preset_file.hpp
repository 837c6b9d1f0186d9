// Preset files: portable KEY=value lines (SG_<SWITCH>=value) and full-line '#'
// comments, sourceable by sh. Parsing is strict and validates against the
// manifest; every error names the line and the problem.
#pragma once
#include <string>
#include <vector>

#include "agent/manifest/config.hpp"
#include "agent/manifest/manifest.hpp"

namespace sg::agent {

constexpr std::size_t kMaxPresetLine = 4096;
constexpr std::size_t kMaxPresetBytes = 1 << 20;

struct PresetParse {
  Config config;
  std::vector<std::string> comments;  // without the leading '#'
  std::vector<std::string> errors;    // "line 3: unknown switch SG_FOO"
  bool ok() const { return errors.empty(); }
};

// CRLF line ends and a missing final newline are accepted; NUL bytes, invalid
// UTF-8, leading whitespace, quotes, '$', duplicates, non-SG_ names, unknown
// switches, out-of-domain values, unavailable switches and unmet requires are not.
PresetParse parse_preset(const std::string& text, const Manifest& manifest);

// "KEY=value\n" lines in manifest order after the comment block.
std::string render_preset(const std::vector<std::string>& comment_lines, const Config& config,
                          const Manifest& manifest);

}  // namespace sg::agent
