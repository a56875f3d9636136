// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// The listener owns the LISTEN connection. It turns ready notifications
// (payload: a channel name, and from a spawn maybe its new tasks' ids) into
// (ready_atom, name, ids) for the dispatcher, and
// cancel notifications (payload: a task id) into (cancel_atom, name, args,
// id): it looks the task's channel up, so that the dispatcher can route
// the cancel to the channel actor that owns the attempt, the same route
// its run took. It pings a silent connection, rebuilds a lost one with
// backoff, and after every (re)connect asks the dispatcher to claim again:
// what was spawned while nobody listened sent no notification we saw. Its
// calls run under a connection guard, like the database actors'. It only
// listens: the session, takeover and the probe of notifications are the
// session actor's (session.hpp).
// Detached: it blocks in the database client between polls.
// Takes: see listener_actor in detail/protocol.hpp.

#include <caf/fwd.hpp>

#include "cafmq/actors/detail/context.hpp"
#include "cafmq/actors/detail/database.hpp"
#include "cafmq/actors/detail/protocol.hpp"

namespace cafmq::actors {

/// Spawns the listener, detached (see the top of this header); it tells
/// `dispatcher` and runs its calls under `guard`.
listener_actor spawn_listener(caf::actor_system& sys, context_ptr ctx,
                              dispatcher_actor dispatcher, guard_ptr guard);

} // namespace cafmq::actors
