// Controllers with identical options on one DB share the campaign and never run a
// trial key twice (agent/store/shared_claims.*): three real controllers start together
// against the fake trainer, which logs every run it makes.
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <boost/process.hpp>

#include "agent/store/shared_claims.hpp"
#include "agent/store/store.hpp"
#include "store_sql.hpp"
#include "test_util.hpp"

namespace sg::agent {
namespace {

namespace fs = std::filesystem;
namespace bp = boost::process;

TEST(SharedCampaign, ThreeControllersWithIdenticalOptionsRunEachTrialKeyOnce) {
  const std::string dir = test::make_temp_dir("shared");
  const std::string run_log = dir + "/runs.log";
  const std::vector<std::string> args = test::fake_tune_args(/*repeats=*/2);
  bp::environment env = boost::this_process::environment();
  env.set("FAKE_MANIFEST", "small");
  env.set("FAKE_STEP_SLEEP", "0.1");  // trials overlap between controllers
  env.set("FAKE_RUN_LOG", run_log);
  std::vector<bp::child> controllers;
  for (int i = 0; i < 3; ++i) {
    controllers.emplace_back(test::speedgate_bin(), bp::args(args), env, bp::start_dir(dir),
                             bp::std_out > bp::null,
                             bp::std_err > fmt::format("{}/c{}.err", dir, i));
  }
  for (std::size_t i = 0; i < controllers.size(); ++i) {
    auto& c = controllers[i];
    for (int t = 0; t < 3000 && c.running(); ++t)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (c.running()) c.terminate();
    c.wait();
    EXPECT_EQ(c.exit_code(), 0) << read_file(fmt::format("{}/c{}.err", dir, i)).value_or("");
  }

  Store s(dir + "/sg.db", /*read_only=*/true);
  EXPECT_EQ(raw_db(s).execAndGet("SELECT COUNT(*) FROM campaigns").getInt(), 1)
      << "one shared campaign";
  std::map<std::string, int> finished_per_key;
  int finished = 0;
  for (const auto& t : s.trials(1)) {
    EXPECT_EQ(t.state, "finished") << t.trial_key << " left " << t.state;
    if (t.disposition == Disposition::stale) continue;
    ++finished_per_key[t.trial_key];
    ++finished;
  }
  ASSERT_GT(finished, 3);
  for (const auto& [key, n] : finished_per_key) EXPECT_EQ(n, 1) << key << " ran " << n << " times";
  // Every trainer run is one recorded trial: none ran unrecorded or twice.
  int runs = 0;
  std::istringstream log(read_file(run_log).value_or(""));
  for (std::string line; std::getline(log, line);) runs += line.rfind("run ", 0) == 0 ? 1 : 0;
  EXPECT_EQ(runs, finished);
  fs::remove_all(dir);
}

TEST(SharedCampaign, ReservationsAreTakenOnceAndReleased) {
  const std::string dir = test::make_temp_dir("reserve");
  Store s(dir + "/sg.db");
  CampaignRow c;
  c.workload = "wam";
  c.size = "tiny";
  const auto cid = s.create_campaign(c);
  const auto poll = std::chrono::milliseconds(10);
  EXPECT_EQ(reserve_trial_key(s, cid, "candidate", "k1", 3600, poll), KeyReservation::reserved);
  EXPECT_EQ(reserve_trial_key(s, cid, "candidate", "k1", 3600, poll), KeyReservation::reserved)
      << "ours already";
  TrialRow t;
  t.campaign_id = cid;
  t.trial_key = "k1";
  t.purpose = "candidate";
  t.config_key = "A=1";
  t.steps = 3;
  const auto id = s.claim_trial(t);
  auto rows = s.trials(cid);
  ASSERT_EQ(rows.size(), 1u) << "the claim took the reservation";
  EXPECT_EQ(rows[0].id, id);
  EXPECT_EQ(rows[0].config_key, "A=1");
  EXPECT_EQ(rows[0].steps, 3);
  s.finish_trial(id, TrialFinish{});
  EXPECT_EQ(reserve_trial_key(s, cid, "candidate", "k1", 3600, poll), KeyReservation::finished);

  // A key held by another live controller is waited for: here the holder (pid 1 on
  // this host) finishes it from another thread while we wait.
  EXPECT_EQ(reserve_trial_key(s, cid, "candidate", "k2", 3600, poll), KeyReservation::reserved);
  raw_db(s).exec("UPDATE trials SET controller_pid = 1 WHERE trial_key = 'k2'");
  bool waited = false;
  std::thread holder([&] {
    Store other(dir + "/sg.db");
    while (!waited) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    raw_db(other).exec(
        "UPDATE trials SET state = 'finished', run_ok = 0, disposition = 'crash' WHERE trial_key = "
        "'k2'");
  });
  EXPECT_EQ(reserve_trial_key(s, cid, "candidate", "k2", 3600, poll,
                              [&](const KeyOwner& o) {
                                EXPECT_EQ(o.controller_pid, 1);
                                waited = true;
                              }),
            KeyReservation::finished);
  holder.join();
  EXPECT_TRUE(waited);

  // Unstarted reservations go away when the controller stops.
  EXPECT_EQ(reserve_trial_key(s, cid, "candidate", "k3", 3600, poll), KeyReservation::reserved);
  release_reservations(s, cid);
  EXPECT_FALSE(s.find_trial(cid, "k3"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sg::agent
