#include "agent/protocol/kernel_params.hpp"

#include <cctype>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

namespace sg::agent {
namespace {

// Recursive descent over + - * / ( ) integers and identifiers.
class Expr {
 public:
  Expr(const std::string& s, const std::map<std::string, long long>& vars) : s_(s), vars_(vars) {}
  bool ok() const { return ok_; }
  long long sum() {
    long long v = product();
    while (ok_) {
      skip();
      if (peek('+'))
        v += (++i_, product());
      else if (peek('-'))
        v -= (++i_, product());
      else
        break;
    }
    return v;
  }
  bool at_end() {
    skip();
    return i_ == s_.size();
  }

 private:
  long long product() {
    long long v = atom();
    while (ok_) {
      skip();
      if (peek('*'))
        v *= (++i_, atom());
      else if (peek('/')) {
        ++i_;
        long long d = atom();
        if (d == 0)
          ok_ = false;
        else
          v /= d;
      } else
        break;
    }
    return v;
  }
  long long atom() {
    skip();
    if (i_ >= s_.size()) return fail();
    if (peek('(')) {
      ++i_;
      long long v = sum();
      skip();
      if (!peek(')')) return fail();
      ++i_;
      return v;
    }
    if (std::isdigit(static_cast<unsigned char>(s_[i_]))) {
      long long v = 0;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_])))
        v = v * 10 + (s_[i_++] - '0');
      return v;
    }
    std::string id;
    while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_'))
      id += s_[i_++];
    auto it = vars_.find(id);
    if (id.empty() || it == vars_.end()) return fail();
    return it->second;
  }
  long long fail() {
    ok_ = false;
    return 0;
  }
  void skip() {
    while (i_ < s_.size() && s_[i_] == ' ') ++i_;
  }
  bool peek(char c) const { return i_ < s_.size() && s_[i_] == c; }
  const std::string& s_;
  const std::map<std::string, long long>& vars_;
  std::size_t i_ = 0;
  bool ok_ = true;
};

std::optional<std::map<std::string, std::string>> split_params(const std::string& value) {
  std::map<std::string, std::string> out;
  std::stringstream ss(value);
  std::string item;
  while (std::getline(ss, item, ',')) {
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0) return std::nullopt;
    if (!out.emplace(item.substr(0, eq), item.substr(eq + 1)).second) return std::nullopt;
  }
  return out;
}

}  // namespace

std::string kernel_config_name(const KernelFamily& f) {
  return f.env.rfind("SG_", 0) == 0 ? f.env.substr(3) : f.env;
}

const KernelFamily* find_kernel_family(const Manifest& m, const std::string& config_name) {
  for (const auto& f : m.kernel_families) {
    if (kernel_config_name(f) == config_name) return &f;
  }
  return nullptr;
}

const KernelFamily* find_kernel_family_env(const Manifest& m, const std::string& env) {
  for (const auto& f : m.kernel_families) {
    if (f.env == env) return &f;
  }
  return nullptr;
}

std::optional<bool> eval_constraint(const std::string& expr,
                                    const std::map<std::string, long long>& vars) {
  static const char* kOps[] = {"<=", ">=", "==", "!=", "<", ">"};
  for (const char* op : kOps) {
    auto pos = expr.find(op);
    if (pos == std::string::npos) continue;
    std::string lhs = expr.substr(0, pos), rhs = expr.substr(pos + std::string(op).size());
    Expr a(lhs, vars), b(rhs, vars);
    long long x = a.sum(), y = b.sum();
    if (!a.ok() || !b.ok() || !a.at_end() || !b.at_end()) return std::nullopt;
    std::string o(op);
    if (o == "<=") return x <= y;
    if (o == ">=") return x >= y;
    if (o == "==") return x == y;
    if (o == "!=") return x != y;
    if (o == "<") return x < y;
    return x > y;
  }
  return std::nullopt;
}

Problem validate_kernel_value(const KernelFamily& f, const std::string& value) {
  auto params = split_params(value);
  if (!params)
    return "kernel family " + f.name + ": '" + value + "' is not name=value[,name=value...]";
  std::map<std::string, long long> vars;
  for (const auto& [name, v] : *params) {
    const KernelParam* p = nullptr;
    for (const auto& q : f.parameters) {
      if (q.name == name) p = &q;
    }
    if (!p) return "kernel family " + f.name + ": unknown parameter '" + name + "'";
    bool known = false;
    for (const auto& x : p->values) known |= x == v;
    if (!known)
      return "kernel family " + f.name + ": " + name + "=" + v + " is not one of its values";
    try {
      vars[name] = std::stoll(v);
    } catch (...) {
    }
  }
  for (const auto& c : f.constraints) {
    auto ok = eval_constraint(c, vars);
    if (ok.has_value() && !*ok)
      return "kernel family " + f.name + ": '" + value + "' violates " + c;
  }
  return std::nullopt;
}

std::string canonical_kernel_value(const std::string& text) {
  std::map<std::string, std::string> kv;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string::npos)
      throw std::invalid_argument("kernel parameters: expected name=value, got '" + item + "'");
    kv[item.substr(0, eq)] = item.substr(eq + 1);
  }
  std::string out;
  for (const auto& [k, v] : kv) out += (out.empty() ? "" : ",") + k + "=" + v;
  return out;
}

std::vector<std::string> kernel_candidates(const KernelFamily& f) {
  std::vector<std::string> out = {""};
  for (const auto& p : f.parameters) {
    std::vector<std::string> next;
    for (const auto& prefix : out) {
      for (const auto& v : p.values)
        next.push_back(prefix + (prefix.empty() ? "" : ",") + p.name + "=" + v);
    }
    out = next;
  }
  std::vector<std::string> valid;
  for (const auto& v : out) {
    if (!v.empty() && !validate_kernel_value(f, v)) valid.push_back(canonical_kernel_value(v));
  }
  return valid;
}

}  // namespace sg::agent
