// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// The router's state (router.cpp): what it placed on which worker, the
// joined workers and what waits for them. Internal to the router.

#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <caf/stateful_actor.hpp>

#include "cafmq/actors/detail/context.hpp"
#include "cafmq/actors/detail/protocol.hpp"
#include "runtime/owners.hpp"

namespace cafmq::actors {

class started_attempts;

namespace router_impl {

// An attempt placed on a worker.
struct placed_attempt {
  channel_actor owner;
  worker_port_actor port;
  // Its task's metrics, and when it started.
  runtime_metrics::task_instruments* metrics = nullptr;
  std::chrono::steady_clock::time_point started;
  // Its task's timeout, armed when it starts.
  std::optional<std::chrono::microseconds> timeout;
  // Held ahead on its worker: queued there, not started.
  bool ahead = false;
};

// A joined worker, as the router places attempts on it.
struct worker_entry {
  worker_port_actor port;
  worker_offer offer;
  // Attempts on it now, running or held ahead.
  int load = 0;
  // The attempts held ahead (sent while `capacity` ran), in the order
  // sent, which is the order the worker starts them in: each ending of
  // one that ran starts the first (see router.cpp).
  std::deque<attempt_ref> ahead;
  // Attempts placed by the current message, sent in one batch by `flush`.
  std::vector<claimed_task> batch;
};

using waiting_list = std::deque<std::pair<claimed_task, channel_actor>>;

struct router_state {
  context_ptr ctx;
  database_actor db;
  std::shared_ptr<started_attempts> started;
  std::unordered_map<attempt_ref, placed_attempt> placed;
  // Shared with the exit hook, which stops the ports however we end.
  std::shared_ptr<std::vector<worker_entry>> workers
    = std::make_shared<std::vector<worker_entry>>();
  // Attempts waiting for a free worker, by task name.
  std::unordered_map<std::string, waiting_list> waiting;
  // Told what the workers offer.
  offer_listener_actor offers_to;
  actors::owners owners;
  bool stopping = false;
  static inline const char* name = "cafmq.router";
};

using router_ptr = router_actor::stateful_pointer<router_state>;

} // namespace router_impl

} // namespace cafmq::actors
