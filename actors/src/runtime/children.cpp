// SPDX-License-Identifier: BSD-3-Clause
#include <caf/all.hpp>

#include "cafmq/actors/detail/completer.hpp"
#include "cafmq/actors/detail/database.hpp"
#include "cafmq/actors/detail/dispatcher.hpp"
#include "cafmq/actors/detail/event_hub.hpp"
#include "cafmq/actors/detail/keeper.hpp"
#include "cafmq/actors/detail/listener.hpp"
#include "cafmq/actors/detail/maintenance.hpp"
#include "cafmq/actors/detail/pool.hpp"
#include "cafmq/actors/detail/router.hpp"
#include "cafmq/actors/detail/session.hpp"
#include "cafmq/actors/detail/watch_service.hpp"
#include "cafmq/error.hpp"
#include "runtime/executor.hpp"
#include "runtime/supervisor_state.hpp"

// The runtime's children: how each starts, and what a restart tells its
// siblings (see supervisor.hpp).

namespace cafmq::actors {

const char* to_string(db_role x) {
  switch (x) {
    case db_role::claim:
      return "claim";
    case db_role::claim_ids:
      return "claim_ids";
    case db_role::write:
      return "write";
    case db_role::renew:
      return "renew";
    case db_role::admin:
      return "admin";
    case db_role::upkeep:
      return "upkeep";
  }
  return "?";
}

} // namespace cafmq::actors

namespace cafmq::actors::runtime_impl {

supervisor_actor me(supervisor_ptr self) {
  return caf::actor_cast<supervisor_actor>(self);
}

void tell_face(supervisor_ptr self) {
  auto& st = self->state;
  self->send(st.face, peers_atom::value, st.admin_db);
  self->send(st.face, peers_atom::value, st.dispatcher);
  self->send(st.face, peers_atom::value, st.events);
  self->send(st.face, peers_atom::value, st.watches);
  self->send(st.face, peers_atom::value, st.router);
}

namespace {

template <class Handle>
void adopt(supervisor_ptr self, const Handle& child) {
  self->monitor(child);
  self->state.children->push_back(caf::actor_cast<caf::actor>(child));
}

} // namespace

database_actor make_db(supervisor_ptr self, db_role role) {
  auto& st = self->state;
  auto db = st.parts.make_db(self->system(), role, me(self));
  adopt(self, db);
  return db;
}

void start_completer(supervisor_ptr self) {
  auto& st = self->state;
  st.completer = spawn_completer(self->system(), st.ctx, st.write_db);
  adopt(self, st.completer);
}

namespace {

// Where handlers checkpoint: the write database, or a stand-in's.
database_actor backend_db(supervisor_ptr self) {
  auto& st = self->state;
  return st.parts.backend_db ? st.parts.backend_db : st.write_db;
}

} // namespace

void start_pool(supervisor_ptr self) {
  auto& st = self->state;
  st.pool = spawn_pool(self->system(), st.ctx, st.parts.make_executor(),
                       backend_db(self), st.parts.started);
  adopt(self, st.pool);
}

void start_router(supervisor_ptr self) {
  auto& st = self->state;
  st.router
    = spawn_router(self->system(), st.ctx, backend_db(self), st.parts.started);
  adopt(self, st.router);
  if (st.dispatcher)
    self->send(st.router, peers_atom::value,
               offer_listener_actor{st.dispatcher});
}

void start_dispatcher(supervisor_ptr self) {
  auto& st = self->state;
  st.dispatcher = spawn_dispatcher(self->system(), st.ctx, st.claim_db,
                                   st.ids_db, st.pool, st.router, st.completer,
                                   lease_keeper_actor{st.keeper}, me(self));
  adopt(self, st.dispatcher);
  // Workers that joined before a restart are still there.
  self->send(st.router, peers_atom::value, offer_listener_actor{st.dispatcher});
}

void start_keeper(supervisor_ptr self) {
  auto& st = self->state;
  st.keeper = spawn_keeper(self->system(), st.ctx, st.renew_db);
  adopt(self, st.keeper);
}

void start_maintenance(supervisor_ptr self) {
  auto& st = self->state;
  st.maintenance
    = spawn_maintenance(self->system(), st.ctx, st.admin_db, st.upkeep_db);
  adopt(self, st.maintenance);
}

void start_listener(supervisor_ptr self) {
  auto& st = self->state;
  if (!st.parts.listener)
    return;
  st.listener
    = spawn_listener(self->system(), st.ctx, st.dispatcher, st.listen_guard);
  adopt(self, st.listener);
}

void start_session(supervisor_ptr self) {
  auto& st = self->state;
  if (!st.parts.listener)
    return;
  st.session = spawn_session(self->system(), st.ctx, st.dispatcher,
                             st.session_guard, st.parts.started);
  adopt(self, st.session);
}

void start_watch_service(supervisor_ptr self) {
  auto& st = self->state;
  if (!st.parts.listener)
    return;
  st.watches = spawn_watch_service(self->system(), st.ctx, st.watch_guard);
  adopt(self, st.watches);
}

void start_event_hub(supervisor_ptr self) {
  auto& st = self->state;
  st.events
    = spawn_event_hub(self->system(), st.ctx, events_listener_actor{st.face});
  adopt(self, st.events);
  self->send(st.events, peers_atom::value,
             events_listener_actor{st.dispatcher});
}

// Counts a restart; false when the restart intensity is exceeded.
bool may_restart(supervisor_ptr self) {
  auto& st = self->state;
  auto now = self->clock().now();
  st.restarts.push_back(now);
  st.ctx->metrics->restarted();
  while (!st.restarts.empty()
         && now - st.restarts.front() > st.ctx->cfg.restart_period)
    st.restarts.pop_front();
  if (static_cast<int>(st.restarts.size()) <= st.ctx->cfg.max_restarts)
    return true;
  st.ctx->log(log_level::error, "restart intensity exceeded, stopping",
              {{"restarts", st.restarts.size()},
               {"period_ms", st.ctx->cfg.restart_period.count()}});
  begin_stop(self);
  return false;
}

// A child went down: start it again and tell the siblings that talk to it.
void child_down(supervisor_ptr self, const caf::down_msg& msg) {
  auto& st = self->state;
  if (st.stopping)
    return;
  auto& kids = *st.children;
  kids.erase(std::remove_if(kids.begin(), kids.end(),
                            [&](auto& x) { return x.address() == msg.source; }),
             kids.end());
  auto is = [&](const auto& handle) {
    return handle && handle.address() == msg.source;
  };
  std::string which;
  if (is(st.claim_db)) {
    which = "claim database";
    st.claim_db = make_db(self, db_role::claim);
    self->send(st.dispatcher, peers_atom::value, st.claim_db);
  } else if (is(st.ids_db)) {
    which = "claim-by-id database";
    st.ids_db = make_db(self, db_role::claim_ids);
    self->send(st.dispatcher, peers_atom::value, ready_atom::value, st.ids_db);
  } else if (is(st.write_db)) {
    which = "write database";
    st.write_db = make_db(self, db_role::write);
    self->send(st.completer, peers_atom::value, st.write_db);
    if (!st.parts.backend_db) {
      self->send(st.pool, peers_atom::value, st.write_db);
      self->send(st.router, peers_atom::value, st.write_db);
    }
  } else if (is(st.renew_db)) {
    which = "renew database";
    st.renew_db = make_db(self, db_role::renew);
    self->send(st.keeper, peers_atom::value, st.renew_db);
  } else if (is(st.admin_db)) {
    which = "admin database";
    st.admin_db = make_db(self, db_role::admin);
    self->send(st.maintenance, peers_atom::value, st.admin_db);
  } else if (is(st.upkeep_db)) {
    which = "upkeep database";
    st.upkeep_db = make_db(self, db_role::upkeep);
    self->send(st.maintenance, peers_atom::value, upkeep_atom::value,
               st.upkeep_db);
  } else if (is(st.completer)) {
    which = "completer";
    start_completer(self);
    self->send(st.dispatcher, peers_atom::value, st.completer);
  } else if (is(st.pool)) {
    which = "pool";
    start_pool(self);
    self->send(st.dispatcher, peers_atom::value, st.pool);
  } else if (is(st.router)) {
    which = "router";
    start_router(self);
    self->send(st.dispatcher, peers_atom::value, st.router);
  } else if (is(st.dispatcher)) {
    which = "dispatcher";
    start_dispatcher(self);
    self->send(st.events, peers_atom::value,
               events_listener_actor{st.dispatcher});
    if (st.listener)
      self->send(st.listener, peers_atom::value, st.dispatcher);
    if (st.session)
      self->send(st.session, peers_atom::value, st.dispatcher);
  } else if (is(st.keeper)) {
    which = "keeper";
    start_keeper(self);
    // The channels tell the new keeper what they hold.
    self->send(st.dispatcher, peers_atom::value, lease_keeper_actor{st.keeper});
  } else if (is(st.maintenance)) {
    which = "maintenance";
    start_maintenance(self);
  } else if (is(st.listener)) {
    which = "listener";
    start_listener(self);
  } else if (is(st.session)) {
    which = "session";
    start_session(self);
  } else if (is(st.watches)) {
    which = "watch service";
    start_watch_service(self);
  } else if (is(st.events)) {
    which = "event hub";
    start_event_hub(self);
  } else {
    return;
  }
  st.ctx->log(
    log_level::error, "actor crashed, restarted",
    {{"actor", which}, {"reason", msg.reason ? render(msg.reason) : "exited"}});
  tell_face(self);
  may_restart(self);
}

void break_hung_connections(supervisor_ptr self) {
  auto& st = self->state;
  auto limit = st.ctx->cfg.request_timeout;
  auto check = [&](const char* which, const guard_ptr& guard) {
    if (guard && guard->break_if_hung(limit))
      st.ctx->log(log_level::warning,
                  "database call hung, connection dropped and rebuilt",
                  {{"connection", which}, {"limit_ms", limit.count()}});
  };
  for (auto& [role, guard] : st.db_guards)
    check(to_string(role), guard);
  check("listen", st.listen_guard);
  check("session", st.session_guard);
  check("watch", st.watch_guard);
}

} // namespace cafmq::actors::runtime_impl
