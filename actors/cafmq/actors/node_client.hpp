// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// Blocking calls on a connected node (see connect_node in node.hpp), for
// programs and the CLI. Each one monitors the node: losing it (a killed
// process at once, a hung one after the middleman's connection timeout)
// ends the call with errc::node_unreachable instead of a hang, and every
// wait is bounded.

#include <functional>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>
#include <caf/fwd.hpp>
#include <caf/timespan.hpp>

#include "cafmq/actors/protocol.hpp"

namespace cafmq::actors {

/// Sends one request to `node` and waits for its answer at most `timeout`.
template <class Result, class... Ts>
caf::expected<Result> ask_node(caf::actor_system& sys, const node_actor& node,
                               caf::timespan timeout, Ts&&... xs);

/// Watches task `id` through `node`: `f` gets its current status, then each
/// change, until it reaches a final state (returns none). An unknown id is
/// an error; so is the node's loss, and `limit` passing before the end
/// (errc::node_unreachable, naming the limit).
caf::error watch_on_node(caf::actor_system& sys, const node_actor& node,
                         const uuid& id,
                         const std::function<void(const task_status&)>& f,
                         caf::timespan limit);

/// Subscribes to the node's events that pass `filter` and hands each batch
/// to `f` until `f` returns false or `limit` passes (both return none).
/// `live` runs once the node confirms the subscription, before the first
/// batch: every event after that moment reaches `f` (spawn what you wait
/// for from there). Losing the node returns errc::node_unreachable.
caf::error subscribe_on_node(
  caf::actor_system& sys, const node_actor& node, const event_filter& filter,
  const std::function<bool(const std::vector<task_event>&)>& f,
  caf::timespan limit, const std::function<void()>& live = nullptr);

/// A request's error as the caller should see it: a timeout or a lost
/// receiver becomes errc::node_unreachable, anything else stays.
caf::error node_error(caf::error err);

/// The node's loss, reported by its down message, as errc::node_unreachable.
caf::error node_lost(const caf::down_msg& msg);

/// The name of an event kind ("started", ...).
std::string to_string(task_event::kind_t x);

} // namespace cafmq::actors

#include <caf/scoped_actor.hpp>

#include "cafmq/error.hpp"

namespace cafmq::actors {

template <class Result, class... Ts>
caf::expected<Result> ask_node(caf::actor_system& sys, const node_actor& node,
                               caf::timespan timeout, Ts&&... xs) {
  // A request's answer is received by message id only, so a lost node would
  // go unnoticed until the timeout: the message is sent instead, and the
  // node's reply (an answer to an asynchronous message comes back as one)
  // competes with the node's down message.
  caf::scoped_actor self{sys};
  self->monitor(node);
  self->send(node, std::forward<Ts>(xs)...);
  caf::expected<Result> result{caf::error{}};
  self->receive([&](Result& x) { result = std::move(x); },
                [&](caf::error& err) { result = node_error(std::move(err)); },
                [&](const caf::down_msg& msg) { result = node_lost(msg); },
                caf::after(timeout) >>
                  [&] { result = node_error(caf::sec::request_timeout); });
  return result;
}

} // namespace cafmq::actors
