// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// The event hub fans task events out to subscribers. Channel actors (which
// own every attempt) report `started` when an attempt goes to a handler and
// `completed`, `failed` or `released` once the completer wrote the outcome;
// the runtime reports `spawned` for the spawns made through it. They send
// only while the event bus counts a subscriber, so events cost nothing
// when nobody listens. The hub monitors each subscriber and drops it when
// it ends (a remote one when its node is lost); each batch goes to each
// subscriber as one message, filtered by its event_filter. The
// subscriptions live in the event bus: a restarted hub serves them on.
// Takes: see event_hub_actor in detail/protocol.hpp.

#include <vector>

#include <caf/fwd.hpp>

#include "cafmq/actors/detail/context.hpp"
#include "cafmq/actors/detail/protocol.hpp"

namespace cafmq::actors {

/// Spawns the hub of the runtime whose context is `ctx`.
event_hub_actor spawn_event_hub(caf::actor_system& sys, context_ptr ctx);

/// An event about one attempt (or spawn) of `task`, seen now.
task_event make_event(task_event::kind_t kind, const claimed_task& task,
                      const runtime_context& ctx);

/// Sends `events` to the hub; nothing if empty or nobody subscribes.
void emit(const runtime_context& ctx, std::vector<task_event> events);

} // namespace cafmq::actors
