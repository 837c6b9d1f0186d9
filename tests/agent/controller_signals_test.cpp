// The controller under signals (docs/reliability.md, "Controller faults"): SIGTERM,
// SIGINT and SIGHUP end the running trial with its strays, record it `killed` and exit
// 128 + signal, and the next controller re-runs it; SIGKILL takes the trainer with it
// and the next controller kills what its descendants left; a `describe` that never
// answers ends with a clear error. The fake trainer hangs ignoring SIGTERM and starts
// a grandchild that calls setsid.
#include <signal.h>
#include <sys/wait.h>

#include <filesystem>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <boost/process.hpp>

#include "agent/common/interrupt.hpp"
#include "agent/store/store.hpp"
#include "test_util.hpp"

namespace sg::agent {
namespace {

namespace fs = std::filesystem;
namespace bp = boost::process;

struct ControllerSignals : ::testing::TestWithParam<int> {
  std::string dir = test::make_temp_dir("signals");
  std::string pids = dir + "/pids";
  void SetUp() override { fs::create_directories(pids); }
  void TearDown() override { fs::remove_all(dir); }

  std::vector<std::string> tune() const { return test::fake_tune_args(); }

  // Starts a controller whose trainers hang ignoring SIGTERM after starting their
  // grandchildren, and waits (bounded) until the first trial's processes all exist.
  bp::child start_hanging_controller() {
    bp::environment env = boost::this_process::environment();
    env.set("FAKE_MANIFEST", "small");
    env.set("FAKE_FAULT", "setsid_hang");
    env.set("FAKE_PID_DIR", pids);
    bp::child c(test::speedgate_bin(), bp::args(tune()), env, bp::start_dir(dir),
                bp::std_out > bp::null, bp::std_err > dir + "/controller.err");
    for (int i = 0; i < 600; ++i) {
      if (!test::pids_named(pids, "setsid").empty() && !test::pids_named(pids, "group").empty())
        break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return c;
  }

  // The controller's exit code, waiting at most 60 s (then it is killed: a failure).
  static int exit_code(bp::child& c) {
    for (int i = 0; i < 600 && c.running(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (c.running()) {
      c.terminate();
      return -1;
    }
    c.wait();
    return c.exit_code();
  }

  void expect_all_gone() {
    for (const char* name : {"trainer", "setsid", "group"}) {
      for (int p : test::pids_named(pids, name)) {
        EXPECT_FALSE(test::still_running_after_wait(p))
            << name << " " << p << " outlived its trial";
      }
    }
  }
};

TEST_P(ControllerSignals, StopSignalEndsTheTrialRecordsItKilledAndExits128PlusSignal) {
  const int sig = GetParam();
  bp::child c = start_hanging_controller();
  ASSERT_FALSE(test::pids_named(pids, "setsid").empty()) << "the first trial never started";
  ::kill(c.id(), sig);
  EXPECT_EQ(exit_code(c), 128 + sig) << test::pids_named(pids, "trainer").size();
  expect_all_gone();

  Store s(dir + "/sg.db", /*read_only=*/true);
  auto trials = s.trials(1);
  ASSERT_FALSE(trials.empty());
  std::int64_t killed = 0;
  for (const auto& t : trials) {
    EXPECT_NE(t.state, "running") << t.trial_key << " was left running";
    if (t.disposition == Disposition::killed) {
      killed = t.id;
      EXPECT_EQ(t.reason.rfind(kInterruptedReason, 0), 0u) << t.reason;
    }
  }
  ASSERT_GT(killed, 0) << "the interrupted trial is recorded killed";
  if (sig != SIGTERM) return;

  // The next controller (healthy trainer now) runs the killed trial again.
  auto r = test::run_speedgate(tune(), dir, {{"FAKE_MANIFEST", "small"}});
  ASSERT_EQ(r.code, 0) << r.err;
  Store after(dir + "/sg.db", true);
  bool rerun = false;
  for (const auto& t : after.trials(1))
    rerun |= t.requeued_from == killed && t.state == "finished" && t.run_ok;
  EXPECT_TRUE(rerun) << "a killed trial is re-queued on resume";
}

INSTANTIATE_TEST_SUITE_P(Signals, ControllerSignals, ::testing::Values(SIGTERM, SIGINT, SIGHUP),
                         [](const auto& info) { return std::string(sigabbrev_np(info.param)); });

TEST_F(ControllerSignals, SigkillTakesTheTrainerAlongAndTheNextControllerEndsItsStrays) {
  bp::child c = start_hanging_controller();
  ASSERT_FALSE(test::pids_named(pids, "setsid").empty()) << "the first trial never started";
  ::kill(c.id(), SIGKILL);
  c.wait();
  for (int p : test::pids_named(pids, "trainer")) {
    EXPECT_FALSE(test::still_running_after_wait(p))
        << "the trainer outlived its SIGKILLed controller";
  }
  auto r = test::run_speedgate(tune(), dir, {{"FAKE_MANIFEST", "small"}});
  ASSERT_EQ(r.code, 0) << r.err;
  expect_all_gone();
  Store s(dir + "/sg.db", true);
  int stale = 0;
  for (const auto& t : s.trials(1)) stale += t.disposition == Disposition::stale ? 1 : 0;
  EXPECT_EQ(stale, 1);
}

TEST_F(ControllerSignals, DescribeThatNeverAnswersEndsWithAClearError) {
  auto r = test::run_speedgate(
      tune(), dir,
      {{"FAKE_DESCRIBE", "hang"}, {"FAKE_PID_DIR", pids}, {"SPEEDGATE_DESCRIBE_TIMEOUT_S", "2"}});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("did not finish within 2 s (SPEEDGATE_DESCRIBE_TIMEOUT_S)"),
            std::string::npos)
      << r.err;
  ASSERT_FALSE(test::pids_named(pids, "setsid").empty());
  expect_all_gone();
  EXPECT_FALSE(fs::exists(dir + "/sg.db")) << "nothing written";

  for (const char* bad : {"nan", "0", "-1", "1e9", "x"}) {
    r = test::run_speedgate(tune(), dir, {{"SPEEDGATE_DESCRIBE_TIMEOUT_S", bad}});
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_NE(r.err.find("SPEEDGATE_DESCRIBE_TIMEOUT_S"), std::string::npos)
        << bad << ": " << r.err;
  }
}

}  // namespace
}  // namespace sg::agent
