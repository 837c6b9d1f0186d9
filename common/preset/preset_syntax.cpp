#include "common/preset/preset_syntax.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

namespace sg::preset {
namespace {

bool is_env_name(std::string_view k) {
  if (k.empty() || (k[0] >= '0' && k[0] <= '9')) return false;
  for (char c : k) {
    if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f'; }

// Characters sh would interpret in an unquoted value (or that end it).
bool sh_special(char c) {
  return is_space(c) || std::strchr("'\"`$\\;&|<>()*?[]{}~#!", c) != nullptr ||
         static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
}

std::string show(std::string_view s) {
  std::string out(s.substr(0, 80));
  return s.size() > 80 ? out + "..." : out;
}

// Why one line is malformed (empty when it is not); fills `entry` for KEY=value lines.
std::string check_line(std::string_view line, Entry* entry, bool* comment) {
  *comment = false;
  if (line.size() > kMaxLine) return "longer than " + std::to_string(kMaxLine) + " characters";
  if (line.find('\0') != std::string_view::npos) return "contains a NUL byte";
  if (line.find('\r') != std::string_view::npos)
    return "contains a carriage return (CR): write LF line ends";
  if (!valid_utf8(line)) return "is not valid UTF-8";
  if (line.empty()) return "";
  if (is_space(line.front())) {
    return "leading whitespace (write KEY=value or a full-line # comment starting in column 1)";
  }
  if (is_space(line.back())) return "trailing whitespace";
  if (line.front() == '#') {
    *comment = true;
    return "";
  }
  const auto eq = line.find('=');
  if (eq == std::string_view::npos) return "expected KEY=value";
  const std::string_view key = line.substr(0, eq), value = line.substr(eq + 1);
  if (!is_env_name(key)) return "'" + show(key) + "' is not a variable name";
  if (key.substr(0, 3) != "SG_")
    return "'" + show(key) + "' is not a switch (only SG_* switch variables are allowed)";
  for (char c : value) {
    if (sh_special(c))
      return "value of " + std::string(key) + " has a character sh would interpret ('" + c + "')";
  }
  entry->key = std::string(key);
  entry->value = std::string(value);
  return "";
}

}  // namespace

bool valid_utf8(std::string_view s) {
  std::size_t i = 0;
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  while (i < s.size()) {
    const unsigned char c = byte(i);
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t extra = 0;
    unsigned char lo = 0x80, hi = 0xbf;  // the allowed range of the first continuation byte
    if (c >= 0xc2 && c <= 0xdf) {
      extra = 1;
    } else if (c >= 0xe0 && c <= 0xef) {
      extra = 2;
      if (c == 0xe0) lo = 0xa0;  // overlong
      if (c == 0xed) hi = 0x9f;  // surrogates
    } else if (c >= 0xf0 && c <= 0xf4) {
      extra = 3;
      if (c == 0xf0) lo = 0x90;  // overlong
      if (c == 0xf4) hi = 0x8f;  // above U+10FFFF
    } else {
      return false;  // a stray continuation byte, C0/C1 (overlong) or F5..FF
    }
    if (i + extra >= s.size()) return false;
    if (byte(i + 1) < lo || byte(i + 1) > hi) return false;
    for (std::size_t k = 2; k <= extra; ++k) {
      if (byte(i + k) < 0x80 || byte(i + k) > 0xbf) return false;
    }
    i += extra + 1;
  }
  return true;
}

Syntax parse_syntax(std::string_view text) {
  Syntax out;
  if (text.size() > kMaxBytes) {
    out.errors.push_back({0, "file is larger than " + std::to_string(kMaxBytes) + " bytes"});
    return out;
  }
  std::map<std::string, int> first_line;
  std::size_t start = 0;
  int lineno = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    const std::string_view line =
        text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    start = end == std::string_view::npos ? text.size() : end + 1;
    ++lineno;
    Entry entry;
    bool comment = false;
    std::string why = check_line(line, &entry, &comment);
    if (why.empty() && !entry.key.empty()) {
      auto [it, fresh] = first_line.emplace(entry.key, lineno);
      if (!fresh)
        why =
            "duplicate switch " + entry.key + " (first on line " + std::to_string(it->second) + ")";
    }
    if (!why.empty()) {
      out.errors.push_back({lineno, why});
    } else if (comment) {
      out.comments.emplace_back(line.substr(1));
    } else if (!entry.key.empty()) {
      entry.line = lineno;
      out.entries.push_back(std::move(entry));
    }
  }
  return out;
}

std::string read_file(const std::string& path, std::string* text) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return std::string("cannot open: ") + std::strerror(errno);
  struct stat st {};
  std::string why;
  if (::fstat(fd, &st) != 0) {
    why = std::string("cannot stat: ") + std::strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    why = S_ISFIFO(st.st_mode)  ? "is not a regular file (a FIFO)"
          : S_ISDIR(st.st_mode) ? "is not a regular file (a directory)"
                                : "is not a regular file (a device or socket)";
  } else if (static_cast<std::size_t>(st.st_size) > kMaxBytes) {
    why = "is larger than " + std::to_string(kMaxBytes) + " bytes";
  }
  text->clear();
  char buf[1 << 16];
  while (why.empty()) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) why = std::string("cannot read: ") + std::strerror(errno);
    if (n <= 0) break;
    text->append(buf, static_cast<std::size_t>(n));
    if (text->size() > kMaxBytes) why = "is larger than " + std::to_string(kMaxBytes) + " bytes";
  }
  ::close(fd);
  if (!why.empty()) text->clear();
  return why;
}

}  // namespace sg::preset
