#include "agent/dashboard/run_log.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <filesystem>

namespace sg::agent::dashboard {
namespace {

namespace fs = std::filesystem;

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// "<prefix><digits>" -> the number; nullopt otherwise.
std::optional<std::int64_t> numbered(const std::string& name, char prefix) {
  if (name.size() < 2 || name.front() != prefix) return std::nullopt;
  std::int64_t v = 0;
  const char* end = name.data() + name.size();
  const auto [p, ec] = std::from_chars(name.data() + 1, end, v);
  if (ec != std::errc() || p != end || v < 0) return std::nullopt;
  return v;
}

}  // namespace

std::vector<LogLocation> log_locations(const std::string& db_path, const std::string& stored_path) {
  const fs::path stored(stored_path);
  const std::string file = stored.filename().string();
  const fs::path run_dir = stored.parent_path();
  const auto run = numbered(run_dir.filename().string(), 't');
  const auto campaign = numbered(run_dir.parent_path().filename().string(), 'c');
  if (file.empty() || file == "." || file == ".." || !run || !campaign) return {};
  const fs::path prefix = run_dir.parent_path().parent_path();
  fs::path db_dir = fs::path(db_path).parent_path();
  if (db_dir.empty()) db_dir = ".";
  std::vector<LogLocation> out;
  const auto add = [&](const fs::path& root) {
    for (const auto& l : out) {
      if (l.root == root.string()) return;
    }
    out.push_back({root.string(), *campaign, *run, file});
  };
  if (stored.is_absolute()) {
    add(prefix);
  } else {
    add(db_dir / prefix);
  }
  add(db_dir / "runs");
  return out;
}

std::optional<std::string> read_log_tail(const LogLocation& where, std::size_t max_bytes) {
  const Fd root(::open(where.root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (root.get() < 0) return std::nullopt;
  const std::string c = "c" + std::to_string(where.campaign_id);
  const std::string t = "t" + std::to_string(where.run_id);
  const int dir_flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  const Fd campaign(::openat(root.get(), c.c_str(), dir_flags));
  if (campaign.get() < 0) return std::nullopt;
  const Fd run(::openat(campaign.get(), t.c_str(), dir_flags));
  if (run.get() < 0) return std::nullopt;
  if (where.file.find('/') != std::string::npos) return std::nullopt;
  // O_NONBLOCK: opening a FIFO for reading must not wait for a writer.
  const Fd log(::openat(run.get(), where.file.c_str(),
                        O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (log.get() < 0) return std::nullopt;
  struct stat st {};
  if (::fstat(log.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) return std::nullopt;
  const auto size = static_cast<std::size_t>(st.st_size);
  const std::size_t start = size > max_bytes ? size - max_bytes : 0;
  std::string body(size - start, '\0');
  std::size_t got = 0;
  while (got < body.size()) {
    const ssize_t n =
        ::pread(log.get(), body.data() + got, body.size() - got, static_cast<off_t>(start + got));
    if (n < 0) return std::nullopt;
    if (n == 0) break;  // truncated meanwhile
    got += static_cast<std::size_t>(n);
  }
  body.resize(got);
  return body;
}

}  // namespace sg::agent::dashboard
