// `speedgate serve` on a database it cannot write (docs/reliability.md): the DB
// file and its directory are read-only to the server process (as root the server
// runs as uid/gid 65534 through setpriv, since root ignores file modes). The
// dashboard API and /metrics answer from it, and no byte or -wal/-shm file appears.
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>

#include <SQLiteCpp/SQLiteCpp.h>
#include <gtest/gtest.h>
#include <boost/process.hpp>

#include "agent/common/files.hpp"
#include "agent/store/fixtures/synthetic_store.hpp"
#include "benchmarks/http_get.hpp"
#include "test_util.hpp"

namespace sg::agent {
namespace {

namespace bp = boost::process;
namespace fs = std::filesystem;

std::map<std::string, std::string> snapshot(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::directory_iterator(dir))
    files[e.path().string()] = read_file(e.path().string(), 64 << 20).value_or("?");
  return files;
}

// A synthetic store of two campaigns of 10 evaluations each at `db`.
void write_small_store(const std::string& db) {
  bench::SyntheticStoreSpec spec;
  spec.campaigns = 2;
  spec.evaluations_per_campaign = 10;
  bench::write_synthetic_store(db, spec);
}

TEST(ServeReadOnly, ServesADatabaseItCannotWrite) {
  const std::string dir = test::make_temp_dir("serve-ro");
  const std::string db = dir + "/sg.db";
  write_small_store(db);
  ASSERT_FALSE(fs::exists(db + "-wal")) << "the writer closed cleanly";

  std::vector<std::string> cmd;
  if (::geteuid() == 0) {
    fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                             fs::perms::others_read | fs::perms::others_exec);
    fs::permissions(db, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                            fs::perms::others_read);
    cmd = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"};
  } else {
    fs::permissions(db, fs::perms::owner_read);
    fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec);
  }
  cmd.push_back(test::speedgate_bin());
  for (const char* a : {"serve", "--db", "sg.db", "--listen", "127.0.0.1:0"}) cmd.emplace_back(a);
  const auto before = snapshot(dir);

  // stderr goes outside the read-only directory, so the snapshot stays exact.
  const std::string err_path = dir + ".serve.err";
  bp::ipstream out;
  bp::child server(bp::args(cmd), bp::start_dir(dir), bp::std_out > out, bp::std_err > err_path);
  std::string url;
  std::getline(out, url);  // "http://127.0.0.1:PORT/" once it listens, EOF if it failed
  ASSERT_EQ(url.rfind("http://127.0.0.1:", 0), 0u)
      << "serve did not start: " << read_file(err_path).value_or("");
  const int port = std::stoi(url.substr(std::string("http://127.0.0.1:").size()));

  auto campaigns = bench::http_get(port, "/api/v1/campaigns");
  EXPECT_EQ(campaigns.status, 200) << campaigns.body;
  EXPECT_NE(campaigns.body.find("\"id\""), std::string::npos) << campaigns.body;
  auto metrics = bench::http_get(port, "/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.body.find("speedgate_"), std::string::npos);
  auto page = bench::http_get(port, "/");
  EXPECT_EQ(page.status, 200);

  ::kill(server.id(), SIGTERM);
  server.wait();
  EXPECT_EQ(server.exit_code(), 0);
  EXPECT_EQ(snapshot(dir), before) << "serve wrote to a read-only database";
  fs::permissions(dir, fs::perms::owner_all);
  fs::remove_all(dir);
  fs::remove(err_path);
}

// A WAL database in a directory serve could write: a plain read-only open would create
// -wal and -shm beside it and leave them; serve reads it as an immutable snapshot instead.
TEST(ServeReadOnly, LeavesNoSideFilesBesideAWritableDb) {
  const std::string dir = test::make_temp_dir("serve-nofiles");
  const std::string db = dir + "/sg.db";
  write_small_store(db);
  {
    SQLite::Database check(db, SQLite::OPEN_READONLY);
    ASSERT_EQ(check.execAndGet("PRAGMA journal_mode").getString(), "wal")
        << "the case that left side files";
  }
  fs::remove(db + "-wal");
  fs::remove(db + "-shm");
  const auto before = snapshot(dir);
  bp::ipstream out;
  bp::child server(test::speedgate_bin(), "serve", "--db", db, "--listen", "127.0.0.1:0",
                   bp::std_out > out, bp::std_err > bp::null);
  std::string url;
  std::getline(out, url);
  ASSERT_EQ(url.rfind("http://127.0.0.1:", 0), 0u);
  const int port = std::stoi(url.substr(std::string("http://127.0.0.1:").size()));
  for (const char* path :
       {"/api/v1/campaigns", "/metrics", "/api/v1/campaigns/1/series", "/api/v1/presets",
        "/api/v1/campaigns/1/switches", "/api/v1/evaluations/1/evidence"}) {
    EXPECT_EQ(bench::http_get(port, path).status, 200) << path;
  }
  ::kill(server.id(), SIGTERM);
  server.wait();
  EXPECT_EQ(server.exit_code(), 0);
  EXPECT_EQ(snapshot(dir), before) << "serve left files beside the database";
  fs::remove_all(dir);
}

TEST(ServeReadOnly, ListensOnLoopbackByDefault) {
  const std::string dir = test::make_temp_dir("serve-help");
  auto r = test::run_speedgate({"serve", "--help"}, dir);
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("127.0.0.1:8321"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sg::agent
