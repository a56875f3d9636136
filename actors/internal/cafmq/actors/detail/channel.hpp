// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// A channel actor owns every attempt of one (channel_name, channel_args) in
// this runtime, from claim to written outcome; an attempt's state lives
// here and nowhere else. It keeps the channel's rules: attempts start in
// claim order, never more than `channel_concurrency` at once (when set),
// never two ordered attempts at once (the database already guarantees that
// across runners; this keeps it true inside one even if a lease is lost),
// and none while the channel is paused. It arms the deadline of each
// attempt from its claim; cancels, deadlines, timeouts, lost leases and the
// runtime's stop all reach the attempt here and take one route: an attempt
// that has not started ends at once, a started one is cancelled where it
// runs: the pool if a handler of its name runs in this process, else the
// router (joined workers). Outcomes go to the completer; the attempt is
// forgotten when the completer reports it written (its lease is renewed until
// then). It reports attempts that left their handlers to the dispatcher (which
// sizes claims by them) and, after a failure was written, asks it to claim
// again (the retry's time is known then). Idle for `channel_idle_timeout`, it
// asks the dispatcher whether it may retire.
// Takes and sends: see channel_actor in detail/protocol.hpp.

#include <string>

#include <caf/fwd.hpp>

#include "cafmq/actors/detail/context.hpp"
#include "cafmq/actors/detail/protocol.hpp"

namespace cafmq::actors {

/// Spawns the owner of channel `key` (name and args, joined by the byte 0x1f).
channel_actor spawn_channel(caf::actor_system& sys, context_ptr ctx,
                            std::string key, dispatcher_actor dispatcher,
                            pool_actor pool, router_actor router,
                            completer_actor completer,
                            lease_keeper_actor keeper, bool paused);

/// The channel name of a key.
std::string channel_name_of(const std::string& key);

} // namespace cafmq::actors
