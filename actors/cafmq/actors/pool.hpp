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
//   (run_atom, std::vector<claimed_task>)  from a channel actor: run them
//   (done_atom, task_outcome)           from a worker
//   (collect_atom)                      executor jobs ended: take their
//                                       outcomes from the shared box
//   (cancel_atom, attempt_ref, cancel_reason)  fire the attempt's token
//   (stop_atom)                         give back what has not started
// Sends (done_atom, std::vector<task_outcome>) to the dispatcher and
// (done_atom, std::vector<attempt_ref>) to the channel actors that sent the
// attempts: one message each per message handled.

#include <caf/fwd.hpp>

#include "cafmq/actors/runner_config.hpp"

namespace cafmq::actors {

caf::actor spawn_pool(caf::actor_system& sys, const runner_config& cfg,
                      caf::actor db, caf::actor dispatcher);

} // namespace cafmq::actors
