// Strict field readers for the JSON files trainers write (result files, kernel-trial
// results): a missing field or one of the wrong type or range throws InvalidField naming
// it, so a parser can turn any flaw into one clear "wrong schema" error.
#pragma once
#include <climits>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "agent/common/json_limits.hpp"
#include "agent/common/problem.hpp"

namespace sg::agent::json_fields {

using nlohmann::json;

struct InvalidField {
  std::string why;
};

inline const json& field(const json& o, const char* key) {
  if (!o.is_object() || !o.contains(key))
    throw InvalidField{std::string("missing field '") + key + "'"};
  return o.at(key);
}

inline double number(const json& o, const char* key) {
  const json& v = field(o, key);
  if (!v.is_number()) throw InvalidField{std::string("field '") + key + "' is not a number"};
  return v.get<double>();
}

inline int integer(const json& o, const char* key) {
  const json& v = field(o, key);
  if (!v.is_number_integer())
    throw InvalidField{std::string("field '") + key + "' is not an integer"};
  // Range-checked: a 2^40 must not wrap into a plausible seed or protocol number.
  if (v.is_number_unsigned()
          ? v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT_MAX)
          : (v.get<std::int64_t>() < INT_MIN || v.get<std::int64_t>() > INT_MAX)) {
    throw InvalidField{std::string("field '") + key + "' is out of range"};
  }
  return static_cast<int>(v.get<std::int64_t>());
}

inline int optional_integer(const json& o, const char* key, int def) {
  return o.is_object() && o.contains(key) ? integer(o, key) : def;
}

inline std::string string(const json& o, const char* key) {
  const json& v = field(o, key);
  if (!v.is_string()) throw InvalidField{std::string("field '") + key + "' is not a string"};
  return v.get<std::string>();
}

// Parses `text` as one JSON document and hands it to `parse`. An empty text, one beyond
// `limits`, invalid JSON, and an InvalidField or other exception thrown by `parse` give
// no result and the error: "<what> is empty", "<what> is nested deeper than 64 levels ...",
// "<what> is not valid JSON (truncated or garbage)", "<what> has the wrong schema: <why>".
template <class T, class Parse>
Parsed<T> parse_document(const std::string& text, const std::string& what, Parse parse,
                         const JsonLimits& limits = kResultLimits) {
  if (text.empty()) return {std::nullopt, what + " is empty"};
  if (Problem e = json_limits_problem(text, limits)) return {std::nullopt, what + " " + *e};
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return {std::nullopt, what + " is not valid JSON (truncated or garbage)"};
  try {
    return {parse(j), ""};
  } catch (const InvalidField& e) {
    return {std::nullopt, what + " has the wrong schema: " + e.why};
  } catch (const std::exception& e) {
    return {std::nullopt, what + " has the wrong schema: " + e.what()};
  }
}

}  // namespace sg::agent::json_fields
