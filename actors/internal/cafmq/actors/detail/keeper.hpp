// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// The keeper renews leases: every keep_alive_interval it asks every
// channel actor (the owners) which attempts they hold, renews them all in
// one statement, and tells each owner what it no longer owns (its lease
// was lost: another runner may run it) and which of its tasks had a cancel
// requested (for notifications that were missed). Lease membership lives
// in the owners; the keeper keeps nothing between ticks but counters. One
// renewal is in flight at a time.
// Takes: see keeper_actor in detail/protocol.hpp.

#include <caf/fwd.hpp>

#include "cafmq/actors/detail/context.hpp"
#include "cafmq/actors/detail/protocol.hpp"

namespace cafmq::actors {

/// Spawns the keeper (see the top of this header); it asks `dispatcher` for the
/// channel actors and renews through `db`.
keeper_actor spawn_keeper(caf::actor_system& sys, context_ptr ctx,
                          dispatcher_actor dispatcher, database_actor db);

} // namespace cafmq::actors
