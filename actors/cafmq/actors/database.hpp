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
// Takes: see database_actor in protocol.hpp.

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include <caf/fwd.hpp>

#include "cafmq/actors/context.hpp"
#include "cafmq/actors/protocol.hpp"

namespace cafmq {
class queue_connection;
} // namespace cafmq

namespace cafmq::actors {

/// Lets another thread break a connection whose call hangs.
class connection_guard {
public:
  /// A call on socket `fd` starts now.
  void enter(int fd) noexcept;

  /// The call returned.
  void leave() noexcept;

  /// Shuts the socket down if its call has run longer than `limit`; true if
  /// it did.
  bool break_if_hung(std::chrono::steady_clock::duration limit) noexcept;

private:
  std::atomic<int> fd_{-1};
  std::atomic<std::int64_t> since_{0};
};

using guard_ptr = std::shared_ptr<connection_guard>;

/// Spawns a detached database actor. `conn`, if given, is an open
/// connection that it takes over (the runner's start-up connection);
/// otherwise it connects on first use. Reports (lost_atom, bool) to
/// `runtime` when it loses or regains its connection.
database_actor spawn_database(caf::actor_system& sys, context_ptr ctx,
                              std::shared_ptr<queue_connection> conn,
                              guard_ptr guard, runtime_actor runtime);

} // namespace cafmq::actors
