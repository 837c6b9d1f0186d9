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
#include "agent/store/sql_value.hpp"

namespace sg::agent {
namespace {

enum class Holder { none, self, live_peer, dead_peer };

bool pid_alive(int pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM); }

// Inserts a reservation row for `key`: a copy of `from` (re-queued from it) or, with
// from = 0, a row knowing only the key and purpose (claim_trial fills in the rest).
void insert_reservation(Store& store, std::int64_t cid, const std::string& purpose,
                        const std::string& key, std::int64_t from) {
  SQLite::Statement ins(
      store_detail::connection(store),
      from ? "INSERT INTO trials(campaign_id, trial_key, purpose, config_key, config_json, seed, "
             "steps, micro_batch, "
             "grad_accum, repeat, state, host, controller_pid, heartbeat_at, requeued_from) "
             "SELECT campaign_id, trial_key, purpose, config_key, config_json, seed, steps, "
             "micro_batch, grad_accum, "
             "repeat, 'running', ?, ?, ?, id FROM trials WHERE id = ?"
           : "INSERT INTO trials(campaign_id, trial_key, purpose, config_key, config_json, seed, "
             "steps, micro_batch, "
             "grad_accum, repeat, state, host, controller_pid, heartbeat_at) "
             "VALUES(?, ?, ?, '', '{}', 0, 0, 1, 1, 0, 'running', ?, ?, ?)");
  int i = 1;
  if (!from) {
    ins.bind(i++, cid);
    ins.bind(i++, key);
    ins.bind(i++, purpose);
  }
  ins.bind(i++, host_name());
  ins.bind(i++, static_cast<int>(::getpid()));
  bind_real(ins, i++, unix_now());
  if (from) ins.bind(i++, from);
  ins.exec();
}

// What one look at the key's newest row decided: reserved or finished, or who holds it.
struct KeyLook {
  std::optional<KeyReservation> decided;
  KeyOwner owner;
  Holder holder = Holder::none;
};

// Takes a queued row of the key for this controller. REQUIRES: inside write().
void take_queued(Store& store, std::int64_t id, const std::string& host, int self) {
  SQLite::Statement take(store_detail::connection(store),
                         "UPDATE trials SET state = 'running', host = ?, controller_pid = ?, "
                         "heartbeat_at = ? WHERE id = ? AND state = 'queued'");
  take.bind(1, host);
  take.bind(2, self);
  bind_real(take, 3, unix_now());
  take.bind(4, id);
  take.exec();
}

// One transaction: reserve the key if it is free, else say who holds it.
KeyLook look_at_key(Store& store, std::int64_t campaign_id, const std::string& purpose,
                    const std::string& key, double stale_after_s) {
  const std::string host = host_name();
  const int self = static_cast<int>(::getpid());
  KeyLook look;
  store.write([&] {
    SQLite::Statement q(store_detail::connection(store),
                        "SELECT id, state, COALESCE(disposition, ''), reason, COALESCE(host, "
                        "''), COALESCE(controller_pid, 0), "
                        "COALESCE(heartbeat_at, 0) FROM trials WHERE campaign_id = ? AND "
                        "trial_key = ? ORDER BY id DESC LIMIT 1");
    q.bind(1, campaign_id);
    q.bind(2, key);
    if (!q.executeStep()) {
      insert_reservation(store, campaign_id, purpose, key, 0);
      look.decided = KeyReservation::reserved;
      return;
    }
    const std::int64_t id = q.getColumn(0).getInt64();
    const std::string state = q.getColumn(1).getString(), disposition = q.getColumn(2).getString();
    const std::string reason = q.getColumn(3).getString();
    look.owner = {id, q.getColumn(4).getString(), q.getColumn(5).getInt()};
    const double heartbeat_at = column_real(q.getColumn(6));
    q.reset();
    if (state == "finished") {
      const bool interrupted = disposition == "killed" && reason.rfind(kInterruptedReason, 0) == 0;
      if (disposition != "stale" && !interrupted) {
        look.decided = KeyReservation::finished;
        return;
      }
      insert_reservation(store, campaign_id, purpose, key, id);
      look.decided = KeyReservation::reserved;
      return;
    }
    if (state == "queued") {
      take_queued(store, id, host, self);
      look.decided = KeyReservation::reserved;
      return;
    }
    if (look.owner.host == host && look.owner.controller_pid == self) {
      look.decided = KeyReservation::reserved;
      return;
    }
    const bool fresh = unix_now() - heartbeat_at <= stale_after_s;
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
      SQLite::Statement st(store_detail::connection(store), sql);
      st.bind(1, campaign_id);
      st.bind(2, host_name());
      st.bind(3, static_cast<int>(::getpid()));
      st.exec();
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
        store.write([&] {
          SQLite::Statement st(store_detail::connection(store),
                               "UPDATE trials SET heartbeat_at = ? WHERE campaign_id = ? AND "
                               "state = 'running' AND host = ? AND controller_pid = ?");
          bind_real(st, 1, unix_now());
          st.bind(2, campaign_id);
          st.bind(3, host_name());
          st.bind(4, static_cast<int>(::getpid()));
          st.exec();
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
