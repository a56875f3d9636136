#pragma once

// The dispatcher is the runtime's supervisor and poller. It owns the worker
// pool, the completer, the listener and one channel actor per active
// (channel_name, channel_args), to which it routes every claimed attempt; the
// channel actors hand them to the pool. It holds claimed attempts ahead of
// the handler slots: up to max_concurrency + prefetch, where prefetch is
// what the runner finishes in prefetch_window at its measured rate (at most
// cfg.prefetch, and more while a full claim finds the runner starved:
// start-up and bursts ramp up in a few claims). When a quarter of that
// buffer is free, or fewer than min_concurrency attempts are held, it claims
// the difference in one batch, so the next claim is under way before the
// held attempts run out (one claim in flight at a time; a wake-up during a
// claim makes it claim again right after). It sends each channel actor the
// attempts of one claim in one message. It wakes on
// (ready_atom) from the listener, on (rescan_atom), and at the nearest
// scheduled time the database reported (capped by max_poll_wait), and renews
// the leases of all its running attempts in one statement per keep-alive
// interval. Messages:
//   (ready_atom, std::string)  a channel has new work
//   (rescan_atom)              claim now (after a reconnect)
//   (cancel_atom, std::string) a cancel was requested for this task id; fire
//                              the token if it runs here (renewals also
//                              report cancels, for missed notifications)
//   (done_atom, std::vector<task_outcome>)  from the pool (or a stopping
//                              channel): attempts ended
//   (stop_atom)                -> true after a graceful stop: stop claiming,
//                              give back attempts that have not started,
//                              let running handlers finish (shutdown_timeout),
//                              flush outcomes, stop the children, quit
//   (retire_atom, std::string) from an idle channel: -> true if it may quit
//   (stats_atom)               -> runner_stats

#include <caf/fwd.hpp>

#include "cafmq/actors/runner_config.hpp"

namespace cafmq::actors {

/// Spawns a dispatcher that claims through `claim_db` and writes through
/// `write_db` (database actors, or stand-ins in tests). With
/// `with_listener`, it also listens for notifications on cfg.database_url.
caf::actor spawn_dispatcher(caf::actor_system& sys, runner_config cfg,
                            caf::actor claim_db, caf::actor write_db,
                            bool with_listener);

} // namespace cafmq::actors
