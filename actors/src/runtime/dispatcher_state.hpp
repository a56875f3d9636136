// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// The dispatcher's state, shared by dispatcher.cpp (claiming) and
// routing.cpp (the channel registry and routes). Internal.

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <caf/actor_clock.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include "cafmq/actors/detail/context.hpp"
#include "cafmq/actors/detail/protocol.hpp"
#include "runtime/claim_sizer.hpp"

namespace cafmq::actors::dispatcher_impl {

struct channel_entry {
  channel_actor handle;
  // Attempts sent to the channel that have not left their handlers.
  int held = 0;
};

using channel_map = std::unordered_map<std::string, channel_entry>;

struct dispatcher_state {
  context_ptr ctx;
  database_actor claim_db;
  pool_actor pool;
  router_actor router;
  // Where events go (invalid while nobody subscribes), for every channel.
  event_sink_actor events;
  completer_actor completer;
  lease_keeper_actor keeper;
  supervisor_actor runtime;
  // Shared with the exit hook, which stops the channels however we end.
  std::shared_ptr<channel_map> channels = std::make_shared<channel_map>();
  int held = 0;
  // Slots given to direct dispatches (spawns through the runtime that
  // claim their task in their own transaction) whose claim has not come
  // back: counted as held by every claim.
  int reserved = 0;
  claim_request request;
  // Claims by id go to a connection of their own (db_role::claim_ids), so
  // that a slow fair claim (a held snapshot keeps the dead entries of every
  // task claimed since in the indexes it walks) does not hold them up. At
  // most one claim of each kind is in flight. A fair claim counts the
  // tasks a claim by id in flight asked for as held; a claim by id does not
  // wait for the slots a fair claim asked for (it would never go, since a
  // fair claim asks for every free slot), so both may return tasks at once
  // and the runner holds up to `ids_asked` attempts beyond its slots, as
  // with prefetch, until its handlers take them.
  database_actor ids_db;
  // A fair claim is in flight.
  bool claiming = false;
  // A claim by id is in flight, for `ids_asked` tasks.
  bool claiming_ids = false;
  int ids_asked = 0;
  // Tasks a fair claim took while a claim by id was in flight (it may have
  // found them locked), and tasks a claim by id found pending but could not
  // take while a fair claim was in flight (that claim may hold them): see
  // claimed_by_id in dispatcher.cpp.
  std::vector<uuid> fair_took;
  std::vector<uuid> unresolved;
  bool claim_again = false;
  // Tasks that spawns named while a claim by id was in flight, or while the
  // runner had no room for them: claimed by id next (when room is made),
  // unless a fair claim comes first (it takes them too).
  std::vector<uuid> named;
  // The last fair claim took every task it could take, and since then only
  // spawns it claimed by id woke the runner: an attempt that ends has no
  // reason to claim (see `claimed` in dispatcher.cpp).
  bool idle = false;
  std::chrono::milliseconds error_backoff{0};
  std::optional<caf::actor_clock::time_point> wake_at;
  std::uint64_t generation = 0;
  // Cancels that came while a claim or a direct dispatch was in flight:
  // (name, args, id).
  std::vector<std::tuple<std::string, std::string, uuid>> deferred_cancels;
  std::set<std::string> paused;
  // Pauses that wait for the claims in flight when they came (each lane's
  // flag: still in flight), which asked without the newly paused name: a
  // pause is answered once none of them can take another task of it.
  struct pause_waiter {
    caf::typed_response_promise<bool> rp;
    bool fair;
    bool ids;
  };
  std::vector<pause_waiter> pauses_waiting;
  bool draining = false;
  std::vector<caf::typed_response_promise<bool>> drained;
  std::optional<claim_sizer> sizer;
  static inline const char* name = "cafmq.dispatcher";
};

using dispatcher_ptr = dispatcher_actor::stateful_pointer<dispatcher_state>;

/// The key of a channel actor: name and args, joined by '\x1f'.
std::string key_of(const std::string& name, const std::string& args);

/// The channel actor of `key`, spawned and monitored on first use.
channel_entry& channel_of(dispatcher_ptr self, const std::string& key);

/// Sends a cancel to the owner of the task's attempt, if it is here.
void route_cancel(dispatcher_ptr self, const std::string& name,
                  const std::string& args, const uuid& id);

/// Routes the cancels that came while a claim was in flight.
void route_deferred_cancels(dispatcher_ptr self);

/// A channel actor ended (retired or crashed).
void channel_down(dispatcher_ptr self, const caf::down_msg& msg);

/// Claims if a claim is worth sending now (dispatcher.cpp).
void maybe_claim(dispatcher_ptr self);

/// Answers pending drains once nothing is held (dispatcher.cpp).
void check_drained(dispatcher_ptr self);

} // namespace cafmq::actors::dispatcher_impl
