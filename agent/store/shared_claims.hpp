// Controllers with identical options share one campaign (docs/controller.md, "Shared
// campaigns"). Before a trial runs, its key is reserved in one BEGIN IMMEDIATE
// transaction: a key another live controller holds is waited for and its result used,
// so no key runs twice. A reservation is a RUNNING row with no start time that only
// its controller's claim_trial takes.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "agent/store/store.hpp"

namespace sg::agent {

enum class KeyReservation {
  reserved,  // this controller holds the key: claim_trial takes the row
  finished,  // a finished outcome exists (the caller reads it)
};

struct KeyOwner {
  std::int64_t trial_id = 0;
  std::string host;
  int controller_pid = 0;
};

// Reserves `key` in the campaign unless a finished, non-stale row has it. While
// another controller that is alive (same host: pid alive; any host: heartbeat within
// stale_after_s) holds it, polls every `poll`; a dead holder's row is marked stale
// (mark_stale_and_requeue) and the key taken. An interrupted controller's `killed`
// row is run again. `on_wait` is called once when a wait begins. Throws Interrupted
// when this controller is told to stop while waiting.
KeyReservation reserve_trial_key(Store& store, std::int64_t campaign_id, const std::string& purpose,
                                 const std::string& key, double stale_after_s,
                                 std::chrono::milliseconds poll,
                                 const std::function<void(const KeyOwner&)>& on_wait = {});

// Reservations this controller made in the campaign and never started: removed
// (new rows) or queued again (re-queued rows). Call when the controller stops.
void release_reservations(Store& store, std::int64_t campaign_id);

// Keeps this controller's RUNNING rows of a campaign fresh (heartbeat_at, every
// `every`) from a thread with its own connection, so a reservation that waits for a
// free slot is never taken for a dead controller's.
class ReservationKeeper {
 public:
  ReservationKeeper(const std::string& db_path, std::int64_t campaign_id,
                    std::chrono::milliseconds every);
  ~ReservationKeeper();
  ReservationKeeper(const ReservationKeeper&) = delete;
  ReservationKeeper& operator=(const ReservationKeeper&) = delete;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace sg::agent
