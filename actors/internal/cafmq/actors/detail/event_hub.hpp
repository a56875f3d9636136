// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// The event hub fans task events out to subscribers. Channel actors (which
// own every attempt) report `started` when an attempt goes to a handler and
// `completed`, `failed` or `released` once the completer wrote the outcome;
// the admin database reports `spawned` for the spawns made through the
// runtime. They send only while someone subscribes, so events cost nothing
// when nobody listens: the hub tells the face and the dispatcher (which
// tells every channel) where events go whenever that changes, its own
// handle or an invalid one. The hub monitors each subscriber and drops it
// when it ends (a remote one when its node is lost); each batch goes to
// each subscriber as one message, filtered by its event_filter. The face
// keeps what it was asked to subscribe and subscribes it again to a
// restarted hub.
// Takes: see event_hub_actor in detail/protocol.hpp.

#include <vector>

#include <caf/fwd.hpp>

#include "cafmq/actors/detail/context.hpp"
#include "cafmq/actors/detail/protocol.hpp"

namespace cafmq::actors {

/// Spawns the hub of the runtime whose context is `ctx`; it tells `face`
/// (and the dispatcher it is given later) where events go.
event_hub_actor spawn_event_hub(caf::actor_system& sys, context_ptr ctx,
                                events_listener_actor face);

/// An event about one attempt (or spawn) of `task`, seen now.
task_event make_event(task_event::kind_t kind, const claimed_task& task,
                      const runtime_context& ctx);

/// Sends `events` to `sink`; nothing if empty or nobody subscribes (an
/// invalid sink).
void emit(const event_sink_actor& sink, std::vector<task_event> events);

} // namespace cafmq::actors
