#include "agent/common/units.hpp"

#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "agent/common/errors.hpp"

namespace sg::agent {

std::int64_t parse_bytes(const std::string& text) {
  std::size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
    ++i;
  std::string num = text.substr(0, i), unit = text.substr(i);
  if (num.empty() || num.front() == '.' || num.find('.') != num.rfind('.')) {
    throw UsageError("bad size '" + text +
                     "': expected a positive number and a unit B|KiB|MiB|GiB|TiB");
  }
  double scale = 0;
  if (unit == "B" || unit.empty())
    scale = 1;
  else if (unit == "KiB")
    scale = 1024.0;
  else if (unit == "MiB")
    scale = 1024.0 * 1024;
  else if (unit == "GiB")
    scale = 1024.0 * 1024 * 1024;
  else if (unit == "TiB")
    scale = 1024.0 * 1024 * 1024 * 1024;
  else
    throw UsageError("bad size unit in '" + text + "': use B, KiB, MiB, GiB or TiB (" +
                     "decimal units like GB are refused to avoid a 7 % mix-up)");
  double v = std::strtod(num.c_str(), nullptr) * scale;
  if (!(v >= 1) || v > 9.0e18) throw UsageError("size '" + text + "' must be positive and finite");
  return static_cast<std::int64_t>(std::llround(v));
}

std::string format_gib(double bytes) {
  return fmt::format("{:.2f} GiB", bytes / (1024.0 * 1024 * 1024));
}

NamedBudget parse_named_budget(const std::string& text) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw UsageError("bad --memory-budget '" + text + "': expected NAME=SIZE, e.g. fast=141GiB");
  }
  NamedBudget b;
  b.name = text.substr(0, eq);
  for (char c : b.name) {
    if (!(std::islower(static_cast<unsigned char>(c)) ||
          std::isdigit(static_cast<unsigned char>(c)) || c == '_')) {
      throw UsageError("bad --memory-budget name '" + b.name + "': use [a-z0-9_]");
    }
  }
  b.bytes = parse_bytes(text.substr(eq + 1));
  return b;
}

}  // namespace sg::agent
