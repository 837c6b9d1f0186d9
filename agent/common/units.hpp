// Byte sizes on the command line. Only exact IEC binary units are accepted
// (B, KiB, MiB, GiB, TiB; case-sensitive suffix, optional fraction): "80GB" is
// refused rather than guessed, because 80 GB and 80 GiB differ by 7 %.
#pragma once
#include <cstdint>
#include <string>

namespace sg::agent {

// Throws UsageError naming the text when it is not "<number><unit>" or is <= 0.
std::int64_t parse_bytes(const std::string& text);
std::string format_gib(double bytes);  // "69.10 GiB"

// "fast=141GiB" -> {name, bytes}; the name must be [a-z0-9_]+ (it becomes a file name).
struct NamedBudget {
  std::string name;
  std::int64_t bytes = 0;
};
NamedBudget parse_named_budget(const std::string& text);

}  // namespace sg::agent
