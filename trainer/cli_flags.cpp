#include "trainer/cli_flags.hpp"

#include "trainer/errors.hpp"

#include <stdexcept>

namespace sg::trainer {

std::vector<std::pair<std::string, std::string>> parse_flags(const std::vector<std::string>& args) {
  std::vector<std::pair<std::string, std::string>> flags;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--", 0) != 0) throw BadInputError("unexpected argument '" + a + "'");
    std::string name = a.substr(2), value;
    const auto eq = name.find('=');
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else {
      if (i + 1 >= args.size()) throw BadInputError("--" + name + " needs a value");
      value = args[++i];
    }
    flags.emplace_back(name, value);
  }
  return flags;
}

int64_t to_int(const std::string& flag, const std::string& v) {
  try {
    size_t used = 0;
    const long long n = std::stoll(v, &used);
    if (used != v.size()) throw std::invalid_argument(v);
    return n;
  } catch (const std::exception&) {
    throw BadInputError("--" + flag + " needs an integer, got '" + v + "'");
  }
}

}  // namespace sg::trainer
