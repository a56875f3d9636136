// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// The runtime actor's state, visible to the deterministic tests (which
// reach its children through it).

#include <deque>
#include <map>
#include <memory>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_clock.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include "cafmq/actors/detail/database.hpp"
#include "cafmq/actors/detail/supervisor.hpp"

namespace cafmq::actors {

struct supervisor_state {
  context_ptr ctx;
  runtime_parts parts;
  // The runtime's public face, told where the calls go.
  face_actor face;
  database_actor claim_db;
  database_actor ids_db;
  database_actor write_db;
  database_actor renew_db;
  database_actor admin_db;
  database_actor upkeep_db;
  completer_actor completer;
  pool_actor pool;
  router_actor router;
  dispatcher_actor dispatcher;
  keeper_actor keeper;
  maintenance_actor maintenance;
  listener_actor listener;
  session_actor session;
  watch_service_actor watches;
  event_hub_actor events;
  // Guards of the connections that real database actors (by role), the
  // listener and the watch service own (none in tests with stand-ins).
  std::map<db_role, guard_ptr> db_guards;
  guard_ptr listen_guard;
  guard_ptr session_guard;
  guard_ptr watch_guard;
  std::deque<caf::actor_clock::time_point> restarts;
  bool stopping = false;
  bool abandoned = false;
  std::vector<caf::typed_response_promise<bool>> stop_promises;
  runner_stats last_stats;
  // Every live child; shared with the exit hook, which stops them however
  // the runtime ends.
  std::shared_ptr<std::vector<caf::actor>> children
    = std::make_shared<std::vector<caf::actor>>();
  static inline const char* name = "cafmq.supervisor";
};

using supervisor_type
  = caf::stateful_actor<supervisor_state, supervisor_actor::base>;

// The runtime's public face (face.cpp): forwards each call to the actor
// that serves it, as the supervisor last told it.
struct face_state {
  supervisor_actor supervisor;
  caf::timespan request_timeout;
  // runner_config::direct_dispatch.
  bool direct_dispatch = false;
  database_actor admin_db;
  dispatcher_actor dispatcher;
  event_hub_actor events;
  // Where spawned events go: invalid while nobody subscribes.
  event_sink_actor sink;
  // What it was asked to subscribe, for a restarted hub.
  std::vector<std::pair<event_filter, event_actor>> subscriptions;
  watch_service_actor watches;
  router_actor router;
  static inline const char* name = "cafmq.runtime";
};

using face_type = caf::stateful_actor<face_state, face_actor::base>;

namespace runtime_impl {

using supervisor_ptr = supervisor_actor::stateful_pointer<supervisor_state>;

supervisor_actor me(supervisor_ptr self);

/// The restart policy's behavior (supervisor.cpp); it tells `face` where
/// the calls go.
supervisor_actor::behavior_type supervisor(supervisor_ptr self,
                                           runner_config cfg,
                                           runtime_parts parts,
                                           face_actor face);

// children.cpp: starting the children, restarting them, the watchdog.
database_actor make_db(supervisor_ptr self, db_role role);
void start_completer(supervisor_ptr self);
void start_pool(supervisor_ptr self);
void start_router(supervisor_ptr self);
void start_dispatcher(supervisor_ptr self);
void start_keeper(supervisor_ptr self);
void start_maintenance(supervisor_ptr self);
void start_listener(supervisor_ptr self);
void start_session(supervisor_ptr self);
void start_watch_service(supervisor_ptr self);
void start_event_hub(supervisor_ptr self);
bool may_restart(supervisor_ptr self);
void child_down(supervisor_ptr self, const caf::down_msg& msg);
void break_hung_connections(supervisor_ptr self);
/// Tells the face the handles that serve its calls.
void tell_face(supervisor_ptr self);

// supervisor.cpp: the graceful stop.
void begin_stop(supervisor_ptr self);

} // namespace runtime_impl

} // namespace cafmq::actors
