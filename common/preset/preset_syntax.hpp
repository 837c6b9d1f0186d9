// Preset files: portable KEY=value lines (SG_<SWITCH>=value) and full-line '#' comments,
// sourceable by sh. This is the syntax both the controller and the trainer apply before
// each checks the keys and values against its own switch list; every error names the
// line. REQUIRES nothing but the C++17 standard library.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace sg::preset {

constexpr std::size_t kMaxBytes = 1u << 20;  // the whole file
constexpr std::size_t kMaxLine = 4096;       // one line, in bytes, without its '\n'

struct Entry {
  std::string key, value;
  int line = 0;
};

struct Error {
  int line = 0;     // 0: the whole file
  std::string why;  // "leading whitespace (...)"
  std::string text() const { return line > 0 ? "line " + std::to_string(line) + ": " + why : why; }
};

struct Syntax {
  std::vector<Entry> entries;         // in file order, keys unique
  std::vector<std::string> comments;  // without the leading '#'
  std::vector<Error> errors;          // every bad line, in order
  bool ok() const { return errors.empty(); }
};

// Refused: a file over kMaxBytes; per line (all reported): a line over kMaxLine, NUL, CR,
// invalid UTF-8, leading or trailing whitespace, an indented comment, no '=', a key that
// is not an SG_* variable name, a value with a character sh would interpret (quotes, '$',
// '\', '`', ';', whitespace, ...) and a key given twice. Empty lines and a missing final
// newline are fine.
Syntax parse_syntax(std::string_view text);

// Reads a preset file into *text. Empty on success, else why not ("is not a regular
// file (a FIFO)", "is larger than 1048576 bytes"): regular files only, opened without
// blocking (a FIFO or a device is refused, never read), at most kMaxBytes.
std::string read_file(const std::string& path, std::string* text);

// Strict UTF-8: no overlong forms (\xc0\x80), no surrogates (\xed\xa0\x80), nothing
// above U+10FFFF (\xf4\x90\x80\x80), no stray continuation bytes.
bool valid_utf8(std::string_view s);

}  // namespace sg::preset
