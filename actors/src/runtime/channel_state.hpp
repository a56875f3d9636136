// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// The channel actor's state (channel.cpp): the attempts it owns, from
// claim to written outcome, and where they run. Internal to the channel.

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>

#include <caf/stateful_actor.hpp>

#include "cafmq/actors/detail/context.hpp"
#include "cafmq/actors/detail/protocol.hpp"
#include "runtime/channel_attempt.hpp"

namespace cafmq::actors::channel_impl {

struct channel_state {
  context_ptr ctx;
  std::string key;
  dispatcher_actor dispatcher;
  // Where attempts run: the pool if a handler of the name runs here, the
  // router (joined workers) if not.
  pool_actor pool;
  router_actor router;
  completer_actor completer;
  // Renews the leases of `attempts`: it hears each one that is added or
  // erased.
  lease_keeper_actor keeper;
  // Where events go: invalid while nobody subscribes.
  event_sink_actor events;
  std::unordered_map<attempt_ref, attempt> attempts;
  // Attempts waiting to start, in claim order.
  std::deque<attempt_ref> queue;
  int started = 0;
  bool ordered_started = false;
  bool paused = false;
  bool stopping = false;
  std::uint64_t idle_generation = 0;
  static inline const char* name = "cafmq.channel";
};

using channel_ptr = channel_actor::stateful_pointer<channel_state>;

} // namespace cafmq::actors::channel_impl
