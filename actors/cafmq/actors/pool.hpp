#pragma once

// The worker pool runs attempts. Plain-function handlers that may block run
// on its executor: max_concurrency threads taking attempts from one queue
// (claimed-ahead attempts wait there), so a blocking handler never stalls
// the scheduler. Handlers declared non-blocking run on scheduled workers and
// actor handlers are spawned per attempt and monitored (fine-grained
// supervision): a handler actor that throws, crashes or exits before
// replying fails that attempt with its exit reason. At most max_concurrency
// of these run at once; the rest wait here.
// An attempt that has not started when a stop comes is given back
// (task_outcome::released); one cancelled before it started ends without
// running.
// Every attempt has a cancellation token; its timeout and deadline are
// timers here that fire it, as do cancels from the dispatcher; a handler
// actor also gets (cancel_atom, cancel_reason).
// Messages:
//   (run_atom, claimed_task)            from a channel actor: run it
//   (done_atom, task_outcome)           from a worker
//   (cancel_atom, attempt_ref, cancel_reason)  fire the attempt's token
//   (stop_atom)                         give back what has not started
// Sends (done_atom, task_outcome) to the dispatcher and (done_atom,
// attempt_ref) to the channel actor that sent the attempt.

#include <caf/fwd.hpp>

#include "cafmq/actors/runner_config.hpp"

namespace cafmq::actors {

caf::actor spawn_pool(caf::actor_system& sys, const runner_config& cfg,
                      caf::actor db, caf::actor dispatcher);

} // namespace cafmq::actors
