// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// The pool executes attempts in this process and reports each outcome to
// its owner, the channel actor that sent it; it keeps no rule of the queue.
// Plain-function handlers that may block run on its executor:
// max_concurrency threads taking attempts from one queue (a thread that
// finishes takes the next one without a round trip through the actors).
// Handlers declared non-blocking run on the scheduler, one short-lived
// actor per attempt. Actor handlers are spawned per attempt and monitored:
// one that throws, crashes or exits before answering fails its attempt
// with the exception's text or its exit reason; one that ignores its cancel
// for `handler_grace` is killed. At most max_concurrency of the last two
// kinds run at once; the rest wait here. The pool arms each attempt's
// timeout when it starts; the timer goes to the owner, which decides.
// Cancels come from the owner: an attempt still waiting for a thread ends
// without running, a running one has its token fired (a handler actor also
// gets (cancel_atom, cancel_reason)). It monitors each owner: when one
// ends, its attempts' tokens fire (reason lost) and what they return is
// dropped. Attempts of names that only joined workers run go to the router
// (router.hpp), not here.
// Takes and sends: see pool_actor in detail/protocol.hpp.

#include <memory>

#include <caf/fwd.hpp>

#include "cafmq/actors/detail/context.hpp"
#include "cafmq/actors/detail/protocol.hpp"

namespace cafmq::actors {

class executor;
class started_attempts;

/// Spawns a pool that runs blocking handlers on `exec`, whose handlers
/// checkpoint through `db`, and that counts in `started` the attempts
/// whose handlers run (executor threads add the ones they start).
pool_actor spawn_pool(caf::actor_system& sys, context_ptr ctx,
                      std::shared_ptr<executor> exec, database_actor db,
                      std::shared_ptr<started_attempts> started);

} // namespace cafmq::actors
