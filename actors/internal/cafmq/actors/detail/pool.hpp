// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// The pool executes attempts and reports each outcome to its owner, the
// channel actor that sent it; it keeps no rule of the queue. Plain-function
// handlers that may block run on its executor: max_concurrency threads
// taking attempts from one queue (a thread that finishes takes the next one
// without a round trip through the actors). Handlers declared non-blocking
// run on the scheduler, one short-lived actor per attempt. Actor handlers
// are spawned per attempt and monitored: one that throws, crashes or exits
// before answering fails its attempt with the exception's text or its exit
// reason; one that ignores its cancel for `handler_grace` is killed. At most
// max_concurrency of the last two kinds run at once; the rest wait here.
// The pool arms each attempt's timeout when it starts; the timer goes to
// the owner, which decides. Cancels come from the owner: an attempt still
// waiting for a thread ends without running, a running one has its token
// fired (a handler actor also gets (cancel_atom, cancel_reason)).
// Joined workers (remote worker nodes, worker processes) run the names that
// no local handler runs: the pool spawns a port per worker (worker_port.hpp)
// and places each attempt on the least loaded worker that offers its name
// and has room, in one batch per worker per message; the rest wait in a
// queue per name. It tells the dispatcher the offered names and their total
// capacity on every join and leave. Cancels of those attempts go to their
// port; attempts placed on a port that lost its worker go back to the
// queue; a stop gives back what waits and stops the ports.
// Takes and sends: see pool_actor in detail/protocol.hpp.

#include <memory>

#include <caf/fwd.hpp>

#include "cafmq/actors/detail/context.hpp"
#include "cafmq/actors/detail/protocol.hpp"

namespace cafmq::actors {

class executor;

/// Spawns a pool that runs blocking handlers on `exec` and whose handlers
/// checkpoint through `db`.
pool_actor spawn_pool(caf::actor_system& sys, context_ptr ctx,
                      std::shared_ptr<executor> exec, database_actor db);

} // namespace cafmq::actors
