#pragma once

// A worker runs one attempt at a time: it looks the handler up in the
// registry, gives it a current_task, and reports a task_outcome to its pool.
// Exceptions and errors from the handler become failures with their message; a
// payload the handler cannot decode is not retried; a handler that returns
// without error is completed (if it did not complete itself). Workers are
// spawned detached, so a blocking handler never stalls the scheduler. Messages:
//   (run_atom, claimed_task)   run it; then send (done_atom, task_outcome)
//                              to the pool

#include <memory>

#include <caf/fwd.hpp>

#include "cafmq/registry.hpp"

namespace cafmq::actors {

/// Spawns a worker; detached (own thread) when `detached` is true.
caf::actor spawn_worker(caf::actor_system& sys, bool detached,
                        std::shared_ptr<const registry> tasks, caf::actor db,
                        caf::actor pool);

} // namespace cafmq::actors
