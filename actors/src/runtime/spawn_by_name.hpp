// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// A spawn sent by name (spawn_request, from another node or the CLI) made
// into a spawn_builder: the task definition's defaults, overridden by every
// field the request sets, with spawn_builder's checks.

#include <functional>
#include <string>

#include <caf/expected.hpp>

#include "cafmq/actors/detail/context.hpp"
#include "cafmq/actors/detail/protocol.hpp"
#include "cafmq/spawn.hpp"

namespace cafmq::actors {

struct named_spawn {
  spawn_builder builder;
  /// Where the task goes (for its `spawned` event).
  std::string channel_name;
  std::string channel_args;
};

/// `errc::unknown_handler` if this runtime has no task of that name; the
/// builder's own error if an option is out of range. The JSON is checked
/// when spawning.
caf::expected<named_spawn> resolve_spawn(const runtime_context& ctx,
                                         const spawn_request& req);

/// Spawns `xs` through `write` (all or nothing) and reports the `spawned`
/// events of those it created to `hub`, if valid (someone listens). The hub
/// holds the tasks' other events from before the write until that report,
/// so no subscriber sees a task start before its spawn.
caf::expected<std::vector<spawn_reply>> write_spawns(
  const runtime_context& ctx, const event_sink_actor& hub,
  const std::vector<named_spawn>& xs,
  const std::function<caf::expected<std::vector<spawn_reply>>()>& write);

} // namespace cafmq::actors
