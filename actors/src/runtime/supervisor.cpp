// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/actors/detail/supervisor.hpp"

#include <deque>

#include <caf/all.hpp>

#include "cafmq/actors/detail/completer.hpp"
#include "cafmq/actors/detail/database.hpp"
#include "cafmq/actors/detail/dispatcher.hpp"
#include "cafmq/actors/detail/event_hub.hpp"
#include "cafmq/actors/detail/keeper.hpp"
#include "cafmq/actors/detail/listener.hpp"
#include "cafmq/actors/detail/maintenance.hpp"
#include "cafmq/actors/detail/pool.hpp"
#include "cafmq/actors/detail/session.hpp"
#include "cafmq/actors/detail/watch_service.hpp"
#include "cafmq/error.hpp"
#include "runtime/executor.hpp"
#include "runtime/started_attempts.hpp"
#include "runtime/supervisor_state.hpp"

namespace cafmq::actors {

namespace runtime_impl {

void collect_stats(supervisor_ptr self,
                   std::function<void(caf::expected<runner_stats>)> f) {
  auto& st = self->state;
  auto timeout = st.ctx->request_timeout();
  // The live gauges from the dispatcher; the counters from the metrics,
  // which export the same ones.
  self->request(st.dispatcher, timeout, stats_atom::value)
    .then(
      [=](runner_stats stats) {
        auto& st = self->state;
        auto x = st.ctx->metrics->totals();
        stats.claimed = x.claimed;
        stats.completed = x.completed;
        stats.failed = x.failed;
        stats.released = x.released;
        stats.claims = x.claims;
        stats.lost = x.lost;
        stats.cancels_at_renewal = x.cancels_at_renewal;
        stats.restarts = x.restarts;
        st.last_stats = stats;
        f(stats);
      },
      [=](caf::error& err) { f(std::move(err)); });
}

void quit_now(supervisor_ptr self, bool ok) {
  // The counters as the stop left them, for whoever reads them after the
  // runtime is gone (runner::stats); the last ones seen if they cannot be
  // read.
  collect_stats(self, [=](caf::expected<runner_stats> x) {
    auto& st = self->state;
    if (st.parts.on_stopped)
      st.parts.on_stopped(x ? *x : st.last_stats);
    for (auto& rp : st.stop_promises)
      rp.deliver(ok);
    st.stop_promises.clear();
    self->quit();
  });
}

// The part of the shutdown timeout kept for the writes after the handlers:
// a fifth of it, at most a second.
caf::timespan stop_reserve(const runner_config& cfg) {
  return std::min<caf::timespan>(std::chrono::seconds{1},
                                 cfg.shutdown_timeout / 5);
}

void flush_and_quit(supervisor_ptr self) {
  auto& st = self->state;
  // Bounded by the stop's reserve: with the database gone, unwritten
  // outcomes are left to lease expiry rather than overrunning the stop.
  auto bound = std::max<caf::timespan>(stop_reserve(st.ctx->cfg),
                                       std::chrono::milliseconds{100});
  self->request(st.completer, bound, flush_atom::value)
    .then([=](bool) { quit_now(self, true); },
          [=](caf::error& err) {
            self->state.ctx->log(log_level::error,
                                 "cannot write every outcome before stopping",
                                 {{"error", render(err)}});
            quit_now(self, false);
          });
}

// Graceful stop: see supervisor.hpp.
void begin_stop(supervisor_ptr self) {
  auto& st = self->state;
  if (st.stopping)
    return;
  st.stopping = true;
  auto& cfg = st.ctx->cfg;
  st.ctx->log(log_level::info, "stopping",
              {{"shutdown_timeout_ms", cfg.shutdown_timeout.count()}});
  // The whole stop fits in the shutdown timeout: handlers run until the
  // handler grace and the reserve are left, then their cancel fires; at
  // the reserve, handler actors are killed (pool) and function handlers
  // still running are abandoned, their attempts handed back; the reserve
  // writes the last outcomes.
  caf::timespan total = cfg.shutdown_timeout;
  auto reserve = stop_reserve(cfg);
  auto give_up_at = total - reserve;
  auto cancel_at
    = std::max<caf::timespan>(caf::timespan{0}, give_up_at - cfg.handler_grace);
  if (cancel_at.count() == 0)
    self->send(self, abandon_atom::value);
  else
    self->delayed_send(self, cancel_at, abandon_atom::value);
  self->delayed_send(st.pool, give_up_at, abandon_atom::value);
  self->request(st.dispatcher, total, drain_atom::value)
    .then([=](bool) { flush_and_quit(self); },
          [=](caf::error& err) {
            // Attempts on joined workers that did not report in time: after
            // a crash, other runners take them over or their leases expire;
            // a late outcome is fenced.
            self->state.ctx->log(log_level::warning,
                                 "attempts still running at the shutdown "
                                 "timeout",
                                 {{"error", render(err)}});
            flush_and_quit(self);
          });
}

supervisor_actor::behavior_type supervisor(supervisor_ptr self,
                                           runner_config cfg,
                                           runtime_parts parts,
                                           face_actor face) {
  auto& st = self->state;
  st.face = std::move(face);
  auto ctx = std::make_shared<runtime_context>(std::move(cfg), parts.metrics);
  if (!parts.started)
    parts.started = std::make_shared<started_attempts>();
  st.ctx = std::move(ctx);
  st.parts = std::move(parts);
  if (!st.parts.make_db) {
    for (auto role : {db_role::claim, db_role::claim_ids, db_role::write,
                      db_role::renew, db_role::admin, db_role::upkeep})
      st.db_guards[role] = std::make_shared<connection_guard>();
    auto startup = std::make_shared<std::shared_ptr<queue_connection>>(
      std::move(st.parts.startup));
    st.parts.make_db
      = [ctx = st.ctx, startup, guards = st.db_guards](
          caf::actor_system& sys, db_role role, supervisor_actor runtime) {
          std::shared_ptr<queue_connection> conn;
          if (role == db_role::claim)
            conn.swap(*startup);
          return spawn_database(sys, ctx, to_string(role), std::move(conn),
                                guards.at(role), std::move(runtime));
        };
  }
  if (st.parts.listener) {
    st.listen_guard = std::make_shared<connection_guard>();
    st.watch_guard = std::make_shared<connection_guard>();
    st.session_guard = std::make_shared<connection_guard>();
  }
  if (!st.parts.make_executor)
    st.parts.make_executor = [ctx = st.ctx] {
      return std::make_shared<executor>(
        static_cast<std::size_t>(ctx->cfg.max_concurrency));
    };
  st.claim_db = make_db(self, db_role::claim);
  st.ids_db = make_db(self, db_role::claim_ids);
  st.write_db = make_db(self, db_role::write);
  st.renew_db = make_db(self, db_role::renew);
  st.admin_db = make_db(self, db_role::admin);
  st.upkeep_db = make_db(self, db_role::upkeep);
  start_completer(self);
  start_pool(self);
  start_router(self);
  start_keeper(self);
  start_dispatcher(self);
  start_maintenance(self);
  start_listener(self);
  start_session(self);
  start_watch_service(self);
  start_event_hub(self);
  self->attach_functor([children = st.children](const caf::error&) {
    for (auto& child : *children)
      caf::anon_send_exit(child, caf::exit_reason::user_shutdown);
  });
  self->set_down_handler([=](caf::down_msg& msg) { child_down(self, msg); });
  if (!st.db_guards.empty() || st.listen_guard)
    self->delayed_send(self, std::chrono::seconds{1}, tick_atom::value);
  return {
    [=](stop_atom) -> caf::typed_response_promise<bool> {
      auto rp = self->make_response_promise<bool>();
      self->state.stop_promises.push_back(rp);
      begin_stop(self);
      return rp;
    },
    [=](stats_atom) -> caf::typed_response_promise<runner_stats> {
      auto rp = self->make_response_promise<runner_stats>();
      collect_stats(self, [=](caf::expected<runner_stats> x) mutable {
        if (x)
          rp.deliver(*x);
        else
          rp.deliver(std::move(x.error()));
      });
      return rp;
    },
    [=](peers_atom) {
      auto& st = self->state;
      return caf::result<database_actor, dispatcher_actor, event_hub_actor,
                         watch_service_actor, router_actor>{
        st.admin_db, st.dispatcher, st.events, st.watches, st.router};
    },
    [=](tick_atom) {
      break_hung_connections(self);
      self->delayed_send(self, std::chrono::seconds{1}, tick_atom::value);
    },
    [=](abandon_atom) {
      auto& st = self->state;
      if (st.abandoned)
        return;
      st.abandoned = true;
      st.ctx->log(log_level::info,
                  "cancelling running handlers: the handler grace and the "
                  "stop's reserve are left of the shutdown timeout");
      self->send(st.dispatcher, abandon_atom::value);
    },
    [=](restart_atom, const std::string&) { may_restart(self); },
    [=](lost_atom, bool lost) {
      auto& st = self->state;
      if (!lost || st.stopping
          || st.ctx->cfg.on_database_loss != database_loss_policy::shutdown)
        return;
      // nq's shutdown-on-disconnect: cancel what runs at once, give handler
      // actors their grace period, write nothing more: the leases decide.
      st.ctx->log(log_level::error,
                  "database connection lost, stopping (policy: shutdown)");
      st.stopping = true;
      st.abandoned = true;
      self->send(st.dispatcher, abandon_atom::value);
      self
        ->request(st.dispatcher,
                  st.ctx->cfg.handler_grace + std::chrono::milliseconds{100},
                  drain_atom::value)
        .then([=](bool) { quit_now(self, false); },
              [=](caf::error&) { quit_now(self, false); });
    },
  };
}

} // namespace runtime_impl

} // namespace cafmq::actors
