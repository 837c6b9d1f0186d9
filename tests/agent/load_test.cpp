// Load (docs/reliability.md): four controllers run 50-trial campaigns against one
// fresh database at the same time. Every campaign completes, the DB holds exactly
// 200 trial rows with no key run twice, and no write ever failed on a lock.
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <boost/process.hpp>

#include "agent/common/files.hpp"
#include "agent/store/store.hpp"
#include "store_sql.hpp"
#include "test_util.hpp"

namespace sg::agent {
namespace {

namespace bp = boost::process;
namespace fs = std::filesystem;

constexpr int kControllers = 4;
constexpr int kTrialsEach = 50;

TEST(Load, FourControllersShareOneDatabase) {
  const std::string dir = test::make_temp_dir("load");
  bp::environment env = boost::this_process::environment();
  env.set("FAKE_MANIFEST", "full");  // set(): Boost 1.74's operator[] reads out of bounds
  std::vector<bp::child> controllers;
  for (int c = 0; c < kControllers; ++c) {
    // Distinct options (--band-factor) make four campaigns; identical ones would
    // resume each other's unfinished campaign by design.
    std::vector<std::string> args =
        test::tune_args("wam", "sg.db", test::fake_trainer(), 3, 3,
                        {"--budget-trials", std::to_string(kTrialsEach), "--target-micro-batch",
                         "32", "--band-factor", std::to_string(2 + c)});
    controllers.emplace_back(test::speedgate_bin(), bp::args(args), env, bp::start_dir(dir),
                             bp::std_out > (dir + "/c" + std::to_string(c) + ".out"),
                             bp::std_err > (dir + "/c" + std::to_string(c) + ".err"));
  }
  for (int c = 0; c < kControllers; ++c) {
    controllers[c].wait();
    const std::string err = read_file(dir + "/c" + std::to_string(c) + ".err").value_or("");
    EXPECT_EQ(controllers[c].exit_code(), 0) << "controller " << c << ":\n" << err;
    EXPECT_EQ(err.find("locked"), std::string::npos) << "controller " << c << ":\n" << err;
    EXPECT_EQ(err.find("busy"), std::string::npos) << "controller " << c << ":\n" << err;
  }

  Store s(dir + "/sg.db", /*read_only=*/true);
  EXPECT_EQ(raw_db(s).execAndGet("PRAGMA integrity_check").getString(), "ok");
  EXPECT_EQ(raw_db(s).execAndGet("SELECT count(*) FROM trials").getInt(),
            kControllers * kTrialsEach);
  EXPECT_EQ(raw_db(s).execAndGet("SELECT count(*) FROM campaigns").getInt(), kControllers);
  SQLite::Statement q(raw_db(s), "SELECT id, state FROM campaigns");
  while (q.executeStep()) {
    const std::int64_t cid = q.getColumn(0).getInt64();
    EXPECT_EQ(q.getColumn(1).getString(), "finished") << "campaign " << cid;
    auto trials = s.trials(cid);
    EXPECT_EQ(trials.size(), static_cast<std::size_t>(kTrialsEach)) << "campaign " << cid;
    std::set<std::string> keys;
    for (const auto& t : trials) {
      EXPECT_EQ(t.state, "finished") << t.trial_key;
      EXPECT_TRUE(keys.insert(t.trial_key).second)
          << "campaign " << cid << " ran " << t.trial_key << " twice";
      EXPECT_EQ(t.reason.find("locked"), std::string::npos) << t.reason;
      EXPECT_TRUE(t.run_ok) << t.trial_key << ": " << t.reason;
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sg::agent
