// libFuzzer target: parse_manifest_text on arbitrary bytes. A bad manifest must be
// a UsageError naming the field (exit 2 at the CLI); any other exception, a crash
// or a sanitizer report is a bug. A manifest that parses must find its own switches.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "agent/common/errors.hpp"
#include "agent/protocol/manifest.hpp"

namespace {

[[noreturn]] void fail(const char* property, const std::string& detail) {
  std::fprintf(stderr, "manifest_fuzz: property violated: %s: %s\n", property, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    sg::agent::Manifest m = sg::agent::parse_manifest_text(text);
    for (const auto& s : m.switches) {
      if (m.find_switch(s.name) != &s || m.find_env(s.env) != &s)
        fail("switch found by name and env", s.name);
      if (!s.in_domain(s.default_value)) fail("default in domain", s.name + "=" + s.default_value);
    }
  } catch (const sg::agent::UsageError& e) {
    if (std::string(e.what()).rfind("manifest", 0) != 0)
      fail("UsageError starts with 'manifest'", e.what());
  }
  return 0;
}
