#pragma once

// The worker pool runs attempts. Plain-function handlers run on its detached
// workers (a fixed set, one attempt each at a time), so a blocking handler
// never stalls the scheduler. Actor handlers are spawned per attempt and
// monitored (fine-grained supervision): a handler actor that throws, crashes
// or exits before replying fails that attempt with its exit reason.
// Every attempt has a cancellation token; its timeout and deadline are
// timers here that fire it, as do cancels from the dispatcher; a handler
// actor also gets (cancel_atom, cancel_reason).
// Messages:
//   (run_atom, claimed_task)            from a channel actor: run it
//   (done_atom, task_outcome)           from a worker
//   (cancel_atom, attempt_ref, cancel_reason)  fire the attempt's token
// Sends (done_atom, task_outcome) to the dispatcher and (done_atom,
// attempt_ref) to the channel actor that sent the attempt.

#include <caf/fwd.hpp>

#include "cafmq/actors/runner_config.hpp"

namespace cafmq::actors {

caf::actor spawn_pool(caf::actor_system& sys, const runner_config& cfg,
                      caf::actor db, caf::actor dispatcher);

} // namespace cafmq::actors
