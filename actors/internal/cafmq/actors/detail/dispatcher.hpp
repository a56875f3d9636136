// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// The dispatcher decides when and how much to claim, and routes: each
// claimed attempt to the channel actor that owns its (channel_name,
// channel_args), spawned on first use and monitored; each cancel to the
// same owner. It keeps counts, not attempts: how many it handed to each
// channel that have not left their handlers (`held`). It holds up to
// max_concurrency + prefetch, where prefetch is what the runner finishes in
// prefetch_window at its measured rate (at most cfg.prefetch, and more
// while a full claim finds the runner starved: start-up and bursts ramp up
// in a few claims). When a quarter of that buffer is free, or fewer than
// min_concurrency are held, it claims the difference in one batch, so the
// next claim is under way before the held attempts run out (one claim in
// flight at a time; a wake-up during a claim makes it claim again right
// after). It wakes on notifications, after written failures, and at the
// nearest scheduled time the database reported (capped by max_poll_wait).
// A spawn through the runtime may get a slot (direct dispatch): the
// spawn's own transaction claims the task, which then comes here as a
// claim's result would; the slot counts as held until it does.
// A cancel that arrives while a claim or a direct dispatch is in flight
// waits for its attempts to reach their owners. An idle channel retires only if
// nothing it was sent is unfinished, so no attempt is ever sent to a channel
// that is gone. Takes: see dispatcher_actor in detail/protocol.hpp.

#include <caf/fwd.hpp>

#include "cafmq/actors/detail/context.hpp"
#include "cafmq/actors/detail/protocol.hpp"

namespace cafmq::actors {

/// Spawns the dispatcher (see the top of this header). It claims fairly
/// through `claim_db` and by id through `ids_db`; its channel actors run
/// attempts on `pool` (handlers of this process) or `router` (joined workers),
/// write outcomes through `completer` and tell `keeper` which attempts they
/// hold; it tells `runtime` when it restarts a channel actor.
dispatcher_actor spawn_dispatcher(caf::actor_system& sys, context_ptr ctx,
                                  database_actor claim_db,
                                  database_actor ids_db, pool_actor pool,
                                  router_actor router,
                                  completer_actor completer,
                                  lease_keeper_actor keeper,
                                  supervisor_actor runtime);

} // namespace cafmq::actors
