// Preset files: portable KEY=value lines (SG_<SWITCH>=value) and full-line '#'
// comments, sourceable by sh. The syntax is common/preset (shared with the trainer);
// this validates the entries against the manifest. Every error names the line.
#pragma once
#include <string>
#include <vector>

#include "agent/protocol/config.hpp"
#include "agent/protocol/manifest.hpp"
#include "common/preset/preset_syntax.hpp"

namespace sg::agent {

constexpr std::size_t kMaxPresetLine = preset::kMaxLine;
constexpr std::size_t kMaxPresetBytes = preset::kMaxBytes;

struct PresetParse {
  Config config;
  std::vector<std::string> comments;  // without the leading '#'
  std::vector<std::string> errors;    // "line 3: unknown switch SG_FOO"
  bool ok() const { return errors.empty(); }
};

// A missing final newline is accepted; what preset::parse_syntax refuses (CR, NUL,
// invalid UTF-8, whitespace around a line, quotes, '$', duplicates, non-SG_ names, ...),
// unknown switches, out-of-domain values, unavailable switches and unmet requires are not.
PresetParse parse_preset(const std::string& text, const Manifest& manifest);

// Reads and parses a preset file (preset::read_file: regular files of at most 1 MiB).
PresetParse parse_preset_file(const std::string& path, const Manifest& manifest);

// "KEY=value\n" lines in manifest order after the comment block.
std::string render_preset(const std::vector<std::string>& comment_lines, const Config& config,
                          const Manifest& manifest);

}  // namespace sg::agent
