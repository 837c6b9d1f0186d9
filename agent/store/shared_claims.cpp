#include "agent/store/shared_claims.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

#include <spdlog/spdlog.h>

#include "agent/common/interrupt.hpp"
#include "agent/store/connection.hpp"
#include "agent/store/statement.hpp"

namespace sg::agent {
namespace {

enum class Holder { none, self, live_peer, dead_peer };

bool pid_alive(int pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM); }

// Inserts a reservation row for `key`: a copy of `from` (re-queued from it) or, with
// from = 0, a row knowing only the key and purpose (claim_trial fills in the rest).
void insert_reservation(Store& store, std::int64_t cid, const std::string& purpose,
                        const std::string& key, std::int64_t from) {
  SQLite::Database& db = store_detail::connection(store);
  const int self = static_cast<int>(::getpid());
  if (from) {
    exec(db,
         "INSERT INTO trials(campaign_id, trial_key, purpose, config_key, config_json, seed, "
         "steps, micro_batch, grad_accum, repeat, state, host, controller_pid, heartbeat_at, "
         "requeued_from) SELECT campaign_id, trial_key, purpose, config_key, config_json, seed, "
         "steps, micro_batch, grad_accum, repeat, 'running', ?, ?, ?, id FROM trials WHERE id = ?",
         host_name(), self, unix_now(), from);
  } else {
    exec(db,
         "INSERT INTO trials(campaign_id, trial_key, purpose, config_key, config_json, seed, "
         "steps, micro_batch, grad_accum, repeat, state, host, controller_pid, heartbeat_at) "
         "VALUES(?, ?, ?, '', '{}', 0, 0, 1, 1, 0, 'running', ?, ?, ?)",
         cid, key, purpose, host_name(), self, unix_now());
  }
}

// What one look at the key's newest row decided: reserved or finished, or who holds it.
struct KeyLook {
  std::optional<KeyReservation> decided;
  KeyOwner owner;
  Holder holder = Holder::none;
};

// Takes a queued row of the key for this controller. REQUIRES: inside write().
void take_queued(Store& store, std::int64_t id, const std::string& host, int self) {
  exec(store_detail::connection(store),
       "UPDATE trials SET state = 'running', host = ?, controller_pid = ?, heartbeat_at = ? WHERE "
       "id = ? AND state = 'queued'",
       host, self, unix_now(), id);
}

// The newest row of a key, as look_at_key weighs it.
struct KeyRow {
  KeyOwner owner;
  std::string state, disposition, reason;
  double heartbeat_at = 0;
};

std::optional<KeyRow> newest_key_row(Store& store, std::int64_t campaign_id,
                                     const std::string& key) {
  return query_one(
      store_detail::connection(store),
      "SELECT id, state, COALESCE(disposition, ''), reason, COALESCE(host, ''), "
      "COALESCE(controller_pid, 0), COALESCE(heartbeat_at, 0) FROM trials WHERE campaign_id = ? "
      "AND trial_key = ? ORDER BY id DESC LIMIT 1",
      [](SQLite::Statement& q) {
        return KeyRow{
            {q.getColumn(0).getInt64(), q.getColumn(4).getString(), q.getColumn(5).getInt()},
            q.getColumn(1).getString(),
            q.getColumn(2).getString(),
            q.getColumn(3).getString(),
            column_real(q.getColumn(6))};
      },
      campaign_id, key);
}

// One transaction: reserve the key if it is free, else say who holds it.
KeyLook look_at_key(Store& store, std::int64_t campaign_id, const std::string& purpose,
                    const std::string& key, double stale_after_s) {
  const std::string host = host_name();
  const int self = static_cast<int>(::getpid());
  KeyLook look;
  store.write([&] {
    const std::optional<KeyRow> row = newest_key_row(store, campaign_id, key);
    if (!row) {
      insert_reservation(store, campaign_id, purpose, key, 0);
      look.decided = KeyReservation::reserved;
      return;
    }
    look.owner = row->owner;
    const std::int64_t id = row->owner.trial_id;
    if (row->state == "finished") {
      const bool interrupted =
          row->disposition == "killed" && row->reason.rfind(kInterruptedReason, 0) == 0;
      if (row->disposition != "stale" && !interrupted) {
        look.decided = KeyReservation::finished;
        return;
      }
      insert_reservation(store, campaign_id, purpose, key, id);
      look.decided = KeyReservation::reserved;
      return;
    }
    if (row->state == "queued") {
      take_queued(store, id, host, self);
      look.decided = KeyReservation::reserved;
      return;
    }
    if (look.owner.host == host && look.owner.controller_pid == self) {
      look.decided = KeyReservation::reserved;
      return;
    }
    const bool fresh = unix_now() - row->heartbeat_at <= stale_after_s;
    look.holder = fresh && (look.owner.host != host || pid_alive(look.owner.controller_pid))
                      ? Holder::live_peer
                      : Holder::dead_peer;
  });
  return look;
}

}  // namespace

KeyReservation reserve_trial_key(Store& store, std::int64_t campaign_id, const std::string& purpose,
                                 const std::string& key, double stale_after_s,
                                 std::chrono::milliseconds poll,
                                 const std::function<void(const KeyOwner&)>& on_wait) {
  bool waiting = false;
  for (;;) {
    throw_if_interrupted();
    const KeyLook look = look_at_key(store, campaign_id, purpose, key, stale_after_s);
    if (look.decided) {
      if (waiting)
        spdlog::info("trial key {} is free again: {}", key,
                     *look.decided == KeyReservation::finished
                         ? "using the other controller's outcome"
                         : "running it here");
      return *look.decided;
    }
    if (look.holder == Holder::dead_peer) {
      store.mark_stale_and_requeue(campaign_id, stale_after_s);
      continue;
    }
    if (!waiting) {
      waiting = true;
      if (on_wait) on_wait(look.owner);
    }
    std::this_thread::sleep_for(poll);
  }
}

void release_reservations(Store& store, std::int64_t campaign_id) {
  store.write([&] {
    const std::string where =
        "campaign_id = ? AND state = 'running' AND started_at IS NULL AND host = ? AND "
        "controller_pid = ?";
    for (const std::string sql :
         {"DELETE FROM trials WHERE requeued_from IS NULL AND " + where,
          "UPDATE trials SET state = 'queued', host = NULL, controller_pid = NULL WHERE " +
              where}) {
      exec(store_detail::connection(store), sql, campaign_id, host_name(),
           static_cast<int>(::getpid()));
    }
  });
}

struct ReservationKeeper::State {
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  std::thread thread;
};

ReservationKeeper::ReservationKeeper(const std::string& db_path, std::int64_t campaign_id,
                                     std::chrono::milliseconds every)
    : state_(std::make_unique<State>()) {
  state_->thread = std::thread([s = state_.get(), db_path, campaign_id, every] {
    try {
      Store store(db_path);
      std::unique_lock<std::mutex> lock(s->mu);
      while (!s->cv.wait_for(lock, every, [s] { return s->stop; })) {
        // The time is taken inside the transaction, after any wait for the lock.
        store.write([&] {
          exec(store_detail::connection(store),
               "UPDATE trials SET heartbeat_at = ? WHERE campaign_id = ? AND state = 'running' "
               "AND host = ? AND controller_pid = ?",
               unix_now(), campaign_id, host_name(), static_cast<int>(::getpid()));
        });
      }
    } catch (const std::exception& e) {
      spdlog::warn("reservation keeper stopped: {}", e.what());
    }
  });
}

ReservationKeeper::~ReservationKeeper() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->stop = true;
  }
  state_->cv.notify_all();
  state_->thread.join();
}

}  // namespace sg::agent
