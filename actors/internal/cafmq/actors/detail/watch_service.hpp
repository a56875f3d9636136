// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// The watch service serves every watch of the runtime (watch_atom from the
// application or a node) with one thread and one listening connection of
// its own, however many watches run: a detail::watch_set follows the
// watched tasks, each task once however many watchers it has. It monitors
// each watcher and forgets one that ends (a remote one when its node is
// lost). It refuses a watch over `max_watches` (errc::limit_reached), and
// ends every watch with errc::runtime_stopped when it ends. The connection
// is opened for the first watch, rebuilt with backoff when it is lost, and
// closed after a while without watches. Its calls run under a connection
// guard, like the listener's. Detached: it blocks in the database client.
// Takes: see watch_service_actor in detail/protocol.hpp.

#include <caf/fwd.hpp>

#include "cafmq/actors/detail/context.hpp"
#include "cafmq/actors/detail/database.hpp"
#include "cafmq/actors/detail/protocol.hpp"

namespace cafmq::actors {

/// Spawns the watch service, detached; it runs its calls under `guard`.
watch_service_actor spawn_watch_service(caf::actor_system& sys, context_ptr ctx,
                                        guard_ptr guard);

} // namespace cafmq::actors
