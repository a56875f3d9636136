#pragma once

// The listener owns the LISTEN connection (never used for transactions) and
// turns notifications on cafmq_ready into (ready_atom, channel_name) and on
// cafmq_cancel into (cancel_atom, task_id) messages for the dispatcher. It runs
// detached: it blocks in await_notification for at most `poll` and re-arms
// itself with a message, so exit messages are handled between waits. A dead
// connection (found by an exception or a periodic ping) is rebuilt with
// backoff. After its first connection and after every rebuild the dispatcher
// gets (rescan_atom): notifications sent before it listened, or while it was
// down, are lost (a runner that claimed at start before its LISTEN took
// effect would otherwise miss a task spawned in between).

#include <chrono>
#include <string>

#include <caf/fwd.hpp>

namespace cafmq::actors {

caf::actor spawn_listener(caf::actor_system& sys, std::string url,
                          caf::actor dispatcher);

} // namespace cafmq::actors
