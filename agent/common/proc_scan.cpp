#include "agent/common/proc_scan.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <map>
#include <string_view>

#include <fmt/format.h>

namespace sg::agent {

std::string supervisor_token(int controller_pid, int pgid) {
  return fmt::format("{}={}:{}", kSupervisorVariable, controller_pid, pgid);
}

std::string read_proc(const std::string& path, std::size_t max) {
  std::string out;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[4096];
  while (out.size() < max) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

std::vector<ProcEntry> list_processes() {
  std::vector<ProcEntry> out;
  DIR* d = ::opendir("/proc");
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    const std::string stat = read_proc(fmt::format("/proc/{}/stat", pid), 4096);
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
  const std::string env = read_proc(fmt::format("/proc/{}/environ", pid), 1 << 20);
  for (std::size_t start = 0; start < env.size();) {
    std::size_t end = env.find('\0', start);
    if (end == std::string::npos) end = env.size();
    const std::string_view e(env.data() + start, end - start);
    if (prefix ? e.substr(0, entry.size()) == entry : e == entry) return true;
    start = end + 1;
  }
  return false;
}

std::set<int> find_processes(int pgid, const std::string& token, bool token_is_prefix,
                             const std::set<int>& roots) {
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
