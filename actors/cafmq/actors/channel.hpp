#pragma once

// A channel actor serves one (channel_name, channel_args) in this runner. The
// dispatcher spawns it when the first attempt of the channel arrives; it
// hands attempts to the worker pool in arrival order, never more than
// `channel_concurrency` at once (when set), and never two ordered attempts
// at once (the database already guarantees that across runners; this keeps
// it true inside one even if a lease is lost). When it has had nothing to do
// for `channel_idle_timeout`, it asks the dispatcher to retire; the
// dispatcher agrees only if it sent nothing the channel has not finished, so
// no attempt is ever sent to a channel that is gone.
// Messages:
//   (run_atom, std::vector<claimed_task>)  from the dispatcher: queue and
//                              run them (one message per claim)
//   (done_atom, std::vector<attempt_ref>)  from the pool: attempts ended
//   (retire_atom)              timer: ask the dispatcher to retire
//   (stop_atom)                the runner stops: start nothing more, give
//                              queued attempts back (released) to the
//                              dispatcher

#include <chrono>
#include <string>

#include <caf/fwd.hpp>

namespace cafmq::actors {

/// Spawns the channel actor for `key`; `limit` 0 means no limit.
caf::actor spawn_channel(caf::actor_system& sys, std::string key, int limit,
                         std::chrono::milliseconds idle_timeout,
                         caf::actor pool, caf::actor dispatcher);

} // namespace cafmq::actors
