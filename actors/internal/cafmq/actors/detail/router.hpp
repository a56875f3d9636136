// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// The router runs attempts on joined workers (remote worker nodes, worker
// processes): the names that no handler of this process runs, which the
// channels send here rather than to the pool. It spawns a port per worker
// (worker_port.hpp) and places each attempt on the least loaded worker
// that offers its name and has room, in one batch per worker per message;
// the rest wait in a queue per name. It tells the dispatcher the offered
// names and their total capacity on every join and leave. Cancels go to
// the attempt's port; attempts placed on a port that lost its worker, and
// those of a name no worker offers any more, go back to the queue. It
// monitors each owner: when one ends, its attempts on workers are
// cancelled (reason lost) and what they return is dropped. A stop gives
// back what waits and stops the ports, which end once their attempts did.
// Takes and sends: see router_actor in detail/protocol.hpp.

#include <memory>

#include <caf/fwd.hpp>

#include "cafmq/actors/detail/context.hpp"
#include "cafmq/actors/detail/protocol.hpp"

namespace cafmq::actors {

class started_attempts;

/// Spawns a router whose workers checkpoint through `db`; it counts in
/// `started` the attempts it placed on workers.
router_actor spawn_router(caf::actor_system& sys, context_ptr ctx,
                          database_actor db,
                          std::shared_ptr<started_attempts> started);

} // namespace cafmq::actors
