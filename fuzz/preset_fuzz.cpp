// libFuzzer target: parse_preset on arbitrary bytes against the recorded test
// manifest. Properties checked beyond "no crash, no sanitizer report": a preset
// that parses renders back to text that parses to the same config, and every
// rejection carries a message.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "agent/common/files.hpp"
#include "agent/presets/preset_file.hpp"

namespace {

const sg::agent::Manifest& manifest() {
  static const sg::agent::Manifest m = sg::agent::parse_manifest_text(
      sg::agent::read_file(SPEEDGATE_SOURCE_DIR "/tests/agent/data/recorded_manifest.json")
          .value());
  return m;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace sg::agent;
  const std::string text(reinterpret_cast<const char*>(data), size);
  PresetParse p = parse_preset(text, manifest());
  if (!p.ok()) {
    for (const auto& e : p.errors) {
      if (e.empty()) std::abort();
    }
    return 0;
  }
  PresetParse again = parse_preset(render_preset({"fuzz"}, p.config, manifest()), manifest());
  if (!again.ok() || again.config != p.config) std::abort();
  return 0;
}
