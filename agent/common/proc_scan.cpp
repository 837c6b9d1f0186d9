#include "agent/common/proc_scan.hpp"

#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>

#include <fmt/format.h>

namespace sg::agent {

std::string supervisor_token(int controller_pid, int pgid) {
  return fmt::format("{}={}:{}", kSupervisorVariable, controller_pid, pgid);
}

std::vector<ProcEntry> list_processes() {
  std::vector<ProcEntry> out;
  DIR* d = ::opendir("/proc");
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    std::ifstream f(fmt::format("/proc/{}/stat", pid));
    std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    // "pid (comm) S ppid pgrp ...": comm may hold spaces and parentheses; the last ')' ends it.
    const auto close = stat.rfind(')');
    if (close == std::string::npos || close + 2 >= stat.size()) continue;
    ProcEntry p;
    p.pid = static_cast<int>(pid);
    char state = '?';
    if (std::sscanf(stat.c_str() + close + 2, "%c %d %d", &state, &p.ppid, &p.pgid) != 3) continue;
    p.state = state;
    out.push_back(p);
  }
  ::closedir(d);
  return out;
}

bool environ_has(int pid, const std::string& entry, bool prefix) {
  std::ifstream f(fmt::format("/proc/{}/environ", pid), std::ios::binary);
  if (!f) return false;
  std::string e;
  while (std::getline(f, e, '\0')) {
    if (prefix ? e.compare(0, entry.size(), entry) == 0 : e == entry) return true;
  }
  return false;
}

std::set<int> find_processes(int pgid, const std::string& token, bool token_is_prefix, const std::set<int>& roots) {
  const int self = static_cast<int>(::getpid());
  const std::vector<ProcEntry> all = list_processes();
  std::map<int, int> parent;
  for (const auto& p : all) parent[p.pid] = p.ppid;
  auto descends = [&](int pid) {
    for (int hops = 0; hops < 64 && pid > 1; ++hops) {
      auto it = parent.find(pid);
      if (it == parent.end()) return false;
      pid = it->second;
      if (roots.count(pid)) return true;
    }
    return false;
  };
  std::set<int> out;
  for (const auto& p : all) {
    if (p.pid == self) continue;
    if ((pgid > 0 && p.pgid == pgid) || roots.count(p.pid) || descends(p.pid) ||
        (!token.empty() && environ_has(p.pid, token, token_is_prefix))) {
      out.insert(p.pid);
    }
  }
  return out;
}

}  // namespace sg::agent
