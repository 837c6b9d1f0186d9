#include "agent/common/files.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace sg::agent {
namespace {

// Removes `.NAME.tmp.<pid>.*` temporaries in `dir` whose writer process is gone (a
// killed writer leaves its temp file behind; the next write of NAME clears it).
void remove_stale_temps(const std::filesystem::path& dir, const std::string& name) {
  const std::string prefix = "." + name + ".tmp.";
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string f = e.path().filename().string();
    if (f.rfind(prefix, 0) != 0) continue;
    const std::string rest = f.substr(prefix.size());
    const auto dot = rest.find('.');
    if (dot == 0 || dot == std::string::npos || rest.find_first_not_of("0123456789") != dot)
      continue;
    const long pid = std::strtol(rest.substr(0, dot).c_str(), nullptr, 10);
    if (pid > 0 && pid != ::getpid() && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      std::filesystem::remove(e.path(), ec);
    }
  }
}

}  // namespace

void write_file_atomic(const std::string& path, const std::string& content) {
  namespace fs = std::filesystem;
  fs::path target(path);
  fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string tmpl =
      (dir / ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()) + ".XXXXXX"))
          .string();
  int fd = ::mkstemp(tmpl.data());
  if (fd < 0)
    throw std::runtime_error("cannot create temp file for " + path + ": " + std::strerror(errno));
  auto fail = [&](const char* what) {
    int e = errno;
    ::close(fd);
    ::unlink(tmpl.c_str());
    throw std::runtime_error(std::string(what) + " " + path + ": " + std::strerror(e));
  };
  std::size_t off = 0;
  while (off < content.size()) {
    ssize_t n = ::write(fd, content.data() + off, content.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("cannot write");
    }
    off += static_cast<std::size_t>(n);
  }
  if (::fchmod(fd, 0644) != 0) fail("cannot chmod");
  if (::fsync(fd) != 0) fail("cannot fsync");
  if (::close(fd) != 0) {
    ::unlink(tmpl.c_str());
    throw std::runtime_error("cannot close " + path);
  }
  if (::rename(tmpl.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmpl.c_str());
    throw std::runtime_error("cannot rename into " + path + ": " + std::strerror(e));
  }
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  remove_stale_temps(dir, target.filename().string());
}

std::optional<std::string> read_file(const std::string& path, std::size_t max_bytes) {
  std::error_code ec;
  auto size = std::filesystem::file_size(path, ec);
  if (ec || size > max_bytes) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace sg::agent
