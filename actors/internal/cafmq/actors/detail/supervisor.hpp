// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// A runtime is two actors. Its face (runtime_actor, face.cpp) is what
// applications and nodes hold: it forwards each call (cancel, status,
// watch, pause and resume, spawn by name, subscribe, join) to the actor
// that serves it, and the stop and the counters to the supervisor. The
// supervisor is the restart policy: it owns the runtime's children, which
// it starts, monitors and restarts OTP-style:
//   the claim, write, renew and admin databases (db_role) -> completer,
//   pool, router, keeper (renew) -> dispatcher (which owns the channel
//   actors, which tell the keeper what they hold), maintenance (admin),
//   listener, session, watch service, event hub.
// A crashed child is started again and the siblings that talk to it, and
// the face, get its new handle (peers_atom). More than max_restarts
// restarts (channel actors included) within restart_period stop the
// runtime gracefully. It owns the
// database-loss policy: reconnect (the database actors reconnect on their
// next call, with the callers' backoff) or shutdown (running handlers are
// cancelled and the runtime stops; their tasks return when their leases
// expire). A watchdog ticks every second and shuts down the socket of any
// database call that has run longer than request_timeout, so a hung
// backend or network is dropped and rebuilt.
// Graceful stop, all of it within shutdown_timeout: the dispatcher stops
// claiming and the channels give back what has not started; running
// handlers run until handler_grace and a reserve (a fifth of the timeout,
// at most 1 s) are left, then their tokens fire (reason shutdown); when
// only the reserve is left, handler actors that ignore the cancel are
// killed and function handlers still running are abandoned (the pool hands
// their attempts back and drops what they return later); the reserve
// writes the last outcomes, then the runtime quits. Its answer to
// (stop_atom) comes after that, and the face ends with it.
// Takes: see runtime_actor in cafmq/actors/protocol.hpp (the face) and
// supervisor_actor in detail/protocol.hpp.

#include <functional>
#include <memory>

#include <caf/fwd.hpp>

#include "cafmq/actors/detail/context.hpp"
#include "cafmq/actors/detail/protocol.hpp"

namespace cafmq {
class queue_connection;
} // namespace cafmq

namespace cafmq::actors {

class executor;
class started_attempts;

/// The runtime's database actors, one connection each, by what they
/// carry, so that no kind of call waits behind another: a slow prune or a
/// hung API call costs no lease and delays no outcome.
enum class db_role {
  /// The dispatcher's fair claims ("cafmq claim").
  claim,
  /// The dispatcher's claims by id ("cafmq claim_ids"): on a connection of
  /// their own, so that a slow fair claim does not hold them up.
  claim_ids,
  /// Outcomes (completer), and handlers' checkpoints and keep-alives
  /// ("cafmq write").
  write,
  /// The keeper's lease renewals ("cafmq renew").
  renew,
  /// Maintenance (prune, expiry), schedules and the runtime's API calls
  /// (cancel, status, pause, spawn) ("cafmq admin").
  admin,
  /// The maintenance's vacuums and compaction of the live table ("cafmq
  /// upkeep"): a vacuum of a large table takes a while, and no API call or
  /// spawn waits behind it.
  upkeep,
};

/// "claim", "claim_ids", "write", "renew", "admin" or "upkeep".
const char* to_string(db_role x);

/// How the runtime makes its parts; tests replace them.
struct runtime_parts {
  /// Makes the database actor of a role. Default: a detached database
  /// actor on cfg.database_url; the first claim database takes over
  /// `startup`.
  std::function<database_actor(caf::actor_system&, db_role,
                               supervisor_actor supervisor)>
    make_db;
  /// An open connection for the first claim database.
  std::shared_ptr<queue_connection> startup;
  /// Makes the pool's executor. Default: max_concurrency threads.
  std::function<std::shared_ptr<executor>()> make_executor;
  /// Start a listener (needs a real database).
  bool listener = true;
  /// Where handlers checkpoint and keep alive; default: the write database.
  database_actor backend_db;
  /// Called with the final counters when a graceful stop ends.
  std::function<void(const runner_stats&)> on_stopped;
  /// The attempts that started, shared with the metrics endpoint;
  /// default: the runtime's own.
  std::shared_ptr<started_attempts> started;
  /// The runtime's metrics (see runtime_metrics.hpp); null: none.
  std::shared_ptr<runtime_metrics> metrics;
};

/// Spawns a runtime (its face, which spawns the supervisor). `cfg` must be
/// checked (see spawn_runner).
runtime_actor spawn_runtime(caf::actor_system& sys, runner_config cfg,
                            runtime_parts parts);

} // namespace cafmq::actors
