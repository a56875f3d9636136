// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// The session actor holds the runner's session for takeover, on a
// connection of its own ("cafmq session", on listen-url like the
// listener's): it registers the session (an advisory lock of this node
// name, see sql/migrations/0007_sessions.sql), records which attempts
// started here (at most every 50 ms), and every takeover_interval hands
// back the tasks of runners whose sessions ended. It also probes that
// notifications sent through the work connections arrive on listen-url;
// when they do not (a pooler in transaction mode), it logs one warning,
// registers no session, tells the dispatcher to claim every
// fallback_poll_interval, and probes again every 30 s. Without takeover
// (takeover_interval 0) and with notifications arriving, it closes its
// connection after the first probe. Its calls run under a connection
// guard. Detached: it blocks in the database client.
// Takes: see session_actor in detail/protocol.hpp.

#include <caf/fwd.hpp>

#include "cafmq/actors/detail/context.hpp"
#include "cafmq/actors/detail/database.hpp"
#include "cafmq/actors/detail/protocol.hpp"

namespace cafmq::actors {

class started_attempts;

/// Spawns the session actor, detached (see the top of this header); it
/// tells `dispatcher` to claim when notifications do not arrive and runs
/// its calls under `guard`.
session_actor spawn_session(caf::actor_system& sys, context_ptr ctx,
                            dispatcher_actor dispatcher, guard_ptr guard,
                            std::shared_ptr<started_attempts> started);

} // namespace cafmq::actors
