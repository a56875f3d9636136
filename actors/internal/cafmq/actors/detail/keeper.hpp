// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// The keeper renews leases. The channel actors (the owners) tell it which
// attempts they own from claim to written outcome (hold_atom, unhold_atom;
// a restarted keeper hears every held attempt again); it monitors each
// owner and forgets what one that ended held. Every keep_alive_interval it
// renews them all in one statement, without asking anyone, and tells each
// owner what it no longer owns (its lease was lost: another runner may run
// it; the keeper stops renewing it) and which of its tasks had a cancel
// requested (for notifications that were missed). One renewal is in flight
// at a time.
// Takes: see keeper_actor in detail/protocol.hpp.

#include <caf/fwd.hpp>

#include "cafmq/actors/detail/context.hpp"
#include "cafmq/actors/detail/protocol.hpp"

namespace cafmq::actors {

/// Spawns the keeper (see the top of this header); it renews through `db`.
keeper_actor spawn_keeper(caf::actor_system& sys, context_ptr ctx,
                          database_actor db);

} // namespace cafmq::actors
