// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// A database actor owns one libpqxx connection (one connection per actor,
// never shared across threads) and runs the queue's statements on it. It
// is spawned detached because every call blocks. A lost connection fails
// the current request with database_unavailable and is reopened on the
// next one; the runtime hears when the connection is lost and when it is
// back. Each call runs under a connection guard: a call that runs longer
// than the request timeout (a hung backend or network) has its socket shut
// down by the runtime's watchdog, so the call fails and the connection is
// rebuilt.
// Takes: see database_actor in detail/protocol.hpp.

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include <caf/fwd.hpp>

#include "cafmq/actors/detail/context.hpp"
#include "cafmq/actors/detail/protocol.hpp"
#include "cafmq/connection_options.hpp"

namespace cafmq {
class connection_breaker;
class queue_connection;
} // namespace cafmq

namespace cafmq::actors {

/// Tells the runtime's watchdog (another thread) how long the current call
/// on a connection has run, and lets it break that connection.
class connection_guard {
public:
  /// A call on the connection of `breaker` starts now.
  void enter(std::shared_ptr<connection_breaker> breaker);

  /// The call returned.
  void leave() noexcept;

  /// Breaks the connection if its call has run longer than `limit`; true if
  /// it did.
  bool break_if_hung(std::chrono::steady_clock::duration limit);

private:
  std::mutex mtx_;
  std::shared_ptr<connection_breaker> breaker_;
  std::chrono::steady_clock::time_point since_;
};

/// Shared by a connection's owner and the runtime's watchdog.
using guard_ptr = std::shared_ptr<connection_guard>;

/// Spawns a detached database actor. `conn`, if given, is an open
/// connection that it takes over (the runner's start-up connection);
/// otherwise it connects on first use, as application `name` (e.g.
/// "cafmq claim": operators see which connection is which). Reports
/// (lost_atom, bool) to `runtime` when it loses or regains its connection.
database_actor spawn_database(caf::actor_system& sys, context_ptr ctx,
                              std::string name,
                              std::shared_ptr<queue_connection> conn,
                              guard_ptr guard, supervisor_actor runtime);

/// The connection options of a runtime connection named `role`.
connection_options connection_for(const runner_config& cfg,
                                  const std::string& role);

} // namespace cafmq::actors
