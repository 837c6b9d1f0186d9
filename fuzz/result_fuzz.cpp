// libFuzzer target: parse_result_text on arbitrary bytes. Every input is either a
// result or an invalid result with a reason; an exception escaping, a crash or a
// sanitizer report is a bug.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "agent/protocol/result.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  sg::agent::ResultParse r = sg::agent::parse_result_text(text);
  if (r.result.has_value() == !r.error.empty()) std::abort();  // exactly one of the two
  if (r.result && r.result->status == "ok") {
    if (r.result->step_records.size() != static_cast<std::size_t>(r.result->steps)) std::abort();
    (void)r.result->peak_allocated_max();
    (void)sg::agent::fingerprint_hash(r.result->fingerprint);
  }
  return 0;
}
