// Trials a dead or silent controller left RUNNING: marked stale exactly once and
// re-queued (docs/controller.md, "Resuming").
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>

#include <fmt/format.h>

#include "agent/common/interrupt.hpp"
#include "agent/common/proc_scan.hpp"
#include "agent/store/row_maps.hpp"
#include "agent/store/store.hpp"

namespace sg::agent {
namespace {

// Is `pgid` still a live trainer group on this host? Checked via /proc so a reused
// pid that now runs something else is never killed.
bool group_runs(int pgid, const std::string& trainer_hint) {
  if (pgid <= 0 || ::kill(-pgid, 0) != 0) return false;
  const std::string s = read_proc("/proc/" + std::to_string(pgid) + "/cmdline", 1 << 16);
  return !trainer_hint.empty() && s.find(trainer_hint) != std::string::npos;
}

bool pid_dead(int pid) { return !(::kill(pid, 0) == 0 || errno == EPERM); }

// The campaign's RUNNING rows, each with whether it is only a reservation (never started).
std::vector<std::pair<TrialRow, bool>> running_trials(SQLite::Database& db,
                                                      std::int64_t campaign_id) {
  return query_all(
      db,
      "SELECT " + trial_map().select_list() +
          ", started_at IS NULL FROM trials WHERE campaign_id = ? AND state = 'running'",
      [](SQLite::Statement& q) {
        return std::make_pair(trial_map().read(q), q.getColumn(trial_map().size()).getInt() != 0);
      },
      campaign_id);
}

// Trials an interrupted controller ended and recorded `killed`, with no newer row of
// their key.
std::vector<std::int64_t> interrupted_trials(SQLite::Database& db, std::int64_t campaign_id) {
  return query_all(db,
                   "SELECT t.id FROM trials t WHERE t.campaign_id = ? AND t.state = 'finished' "
                   "AND t.disposition = 'killed' AND substr(t.reason, 1, ?) = ? AND NOT EXISTS "
                   "(SELECT 1 FROM trials n WHERE n.campaign_id = t.campaign_id "
                   "AND n.trial_key = t.trial_key AND n.id > t.id)",
                   first_int64, campaign_id, static_cast<int>(std::strlen(kInterruptedReason)),
                   std::string(kInterruptedReason));
}

// A key reserved by a controller that never started it: back to the queue.
void unreserve(SQLite::Database& db, std::int64_t trial_id) {
  exec(db,
       "UPDATE trials SET state = 'queued', host = NULL, controller_pid = NULL WHERE id = ? AND "
       "state = 'running' AND started_at IS NULL",
       trial_id);
}

// Exactly once: only the transaction that flips running -> finished re-queues.
bool mark_stale(SQLite::Database& db, std::int64_t trial_id) {
  return exec(db,
              "UPDATE trials SET state = 'finished', disposition = 'stale', run_ok = 0, "
              "reason = 'controller died mid-trial; re-queued', "
              "finished_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now') "
              "WHERE id = ? AND state = 'running'",
              trial_id) == 1;
}

}  // namespace

std::vector<std::int64_t> Store::mark_stale_and_requeue(std::int64_t campaign_id,
                                                        double stale_after_s) {
  std::vector<std::int64_t> marked;
  const std::string host = host_name();
  const double now = unix_now();
  std::string trainer;
  if (auto c = campaign(campaign_id)) trainer = c->trainer;
  std::set<int> dead_controllers;
  write([&] {
    for (const auto& [t, reserved_only] : running_trials(*db_, campaign_id)) {
      const bool same_host = t.host == host;
      const bool controller_dead =
          same_host && t.controller_pid != ::getpid() && pid_dead(t.controller_pid);
      const bool silent = now - t.heartbeat_at > stale_after_s;
      if (!controller_dead && !silent) continue;
      if (controller_dead) dead_controllers.insert(t.controller_pid);
      if (reserved_only) {
        unreserve(*db_, t.id);
        continue;
      }
      if (!mark_stale(*db_, t.id)) continue;
      requeue_copy(t.id);
      if (same_host && group_runs(t.pgid, trainer)) ::kill(-t.pgid, SIGKILL);
      marked.push_back(t.id);
    }
    // Trials recorded `killed` by an interrupted controller run again.
    for (auto id : interrupted_trials(*db_, campaign_id)) requeue_copy(id);
  });
  // What a dead controller's trials left on this host: its ranks died with it
  // (PR_SET_PDEATHSIG); their descendants carry its supervisor token.
  for (int pid : dead_controllers) {
    for (int p : find_processes(0, fmt::format("{}={}:", kSupervisorVariable, pid), true, {})) {
      ::kill(p, SIGKILL);
    }
  }
  return marked;
}

void Store::requeue_copy(std::int64_t trial_id) {
  exec(*db_,
       "INSERT INTO trials(campaign_id, trial_key, purpose, config_key, config_json, seed, steps, "
       "micro_batch, grad_accum, repeat, state, requeued_from) SELECT campaign_id, trial_key, "
       "purpose, config_key, config_json, seed, steps, micro_batch, grad_accum, repeat, 'queued', "
       "id FROM trials WHERE id = ?",
       trial_id);
}

}  // namespace sg::agent
