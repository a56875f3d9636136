#pragma once

// A worker runs one attempt at a time: it looks the handler up in the
// registry, gives it a current_task with the attempt's cancellation token,
// and reports a task_outcome to its pool.
// Exceptions and errors from the handler become failures with their message; a
// payload the handler cannot decode is not retried; a handler that returns
// without error is completed (if it did not complete itself). Worker actors
// run on the scheduler: for handlers declared non-blocking, and for every
// handler in deterministic tests; handlers that may block run on the pool's
// executor threads (run_attempt). Messages:
//   (run_atom, claimed_task, shared_ptr<cancellation>)
//                              run it; then send (done_atom, task_outcome)
//                              to the pool

#include <memory>

#include <caf/fwd.hpp>

#include "cafmq/actors/messages.hpp"
#include "cafmq/registry.hpp"

namespace cafmq::actors {

/// Spawns a worker on the scheduler. `filter` is the runner's failure
/// filter (tasks may override it).
caf::actor spawn_worker(caf::actor_system& sys,
                        std::shared_ptr<const registry> tasks,
                        failure_filter filter, caf::actor db, caf::actor pool);

/// The outcome of an attempt from what its handler returned (`err`),
/// whether it completed in its own transaction, and its token: a cancelled
/// attempt that failed is not retried; one past its timeout or deadline
/// failed whatever it returned; `filter` decides what is retryable.
task_outcome judge(task_outcome result, const caf::error& err, bool recorded,
                   const cancellation& token, const failure_filter& filter);

/// Runs one attempt's handler on the calling thread and judges its outcome.
task_outcome run_attempt(const registry& tasks, const failure_filter& filter,
                         caf::actor_system& sys, const caf::actor& db,
                         const claimed_task& data,
                         const std::shared_ptr<cancellation>& token);

/// The outcome of an attempt that never started: a stop gives it back, a
/// lost lease leaves nothing to write, a cancel (or a limit) ends it like a
/// failed run, judged by `filter`.
task_outcome unstarted_outcome(const attempt_ref& ref, cancel_reason why,
                               const failure_filter& filter);

} // namespace cafmq::actors
