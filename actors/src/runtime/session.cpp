// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/actors/detail/session.hpp"

#include <caf/all.hpp>
#include <pqxx/pqxx>

#include "cafmq/connection_options.hpp"
#include "cafmq/detail/queue_connection.hpp"
#include "cafmq/error.hpp"
#include "cafmq/sql.hpp"
#include "runtime/listening_connection.hpp"
#include "runtime/started_attempts.hpp"
#include "runtime/thread_name.hpp"

namespace cafmq::actors {

namespace {

using namespace std::chrono_literals;

/// How long the probe notification may take to arrive.
constexpr auto probe_timeout = 1s;
/// While notifications do not arrive, the probe is tried again this often.
constexpr auto reprobe_period = 30s;
/// The started attempts are written at most this often; the loop's period.
constexpr auto record_period = 50ms;

struct session_state {
  context_ptr ctx;
  dispatcher_actor dispatcher;
  guard_ptr guard;
  // What started here (pool, router), written to the session.
  std::shared_ptr<started_attempts> started;
  listening_connection link; // first: closed last
  std::unique_ptr<notification_collector> probe;
  std::chrono::milliseconds backoff{0};
  // Notifications sent through the work connections arrive on the
  // listen-url; false: the dispatcher is told to claim every
  // fallback_poll_interval instead.
  bool notified = true;
  bool probed = false;
  std::chrono::steady_clock::time_point next_probe;
  std::chrono::steady_clock::time_point next_fallback;
  // This connection holds the runner's session (its lock).
  bool registered = false;
  std::chrono::steady_clock::time_point next_takeover;
  std::chrono::steady_clock::time_point next_record;
  static inline const char* name = "cafmq.session";

  bool takeover() const {
    return ctx->cfg.takeover_interval.count() > 0;
  }

  void drop() {
    probe.reset();
    registered = false;
    link.close();
  }
};

using session_ptr = session_actor::stateful_pointer<session_state>;

// Sends a notification through a work connection (database_url, which may
// go through a pooler) and waits for it on the session's connection (on
// listen-url, like the listener's). Behind a pooler in transaction mode it
// never arrives: LISTEN holds no server connection of its own.
bool probe_notifications(session_ptr self) {
  auto& st = self->state;
  auto token = to_string(uuid::random());
  {
    auto sender = open_connection(st.ctx->cfg.database_url,
                                  connection_for(st.ctx->cfg, "probe"));
    if (!sender)
      throw std::runtime_error(render(sender.error()));
    pqxx::nontransaction{**sender}.exec_params(
      "SELECT pg_notify('cafmq_probe', $1)", token);
  }
  auto until = std::chrono::steady_clock::now() + probe_timeout;
  for (;;) {
    for (auto& payload : st.probe->payloads)
      if (payload == token) {
        st.probe->payloads.clear();
        return true;
      }
    st.probe->payloads.clear();
    auto now = std::chrono::steady_clock::now();
    if (now >= until)
      return false;
    auto left
      = std::chrono::duration_cast<std::chrono::microseconds>(until - now);
    st.link.conn->await_notification(0, left.count());
  }
}

// Probes; logs when notifications stop or start arriving.
void check_notifications(session_ptr self) {
  auto& st = self->state;
  auto& cfg = st.ctx->cfg;
  auto was = st.notified;
  st.notified = probe_notifications(self);
  st.probed = true;
  st.next_probe = std::chrono::steady_clock::now() + reprobe_period;
  if (!st.notified && was)
    st.ctx->log(
      log_level::warning,
      "notifications do not reach the listening connection (a pooler in "
      "transaction mode?): claiming every fallback-poll-interval instead, "
      "cancels wait for a keep-alive, and dead runners' tasks wait for "
      "their leases; set listen-url to a direct connection",
      {{"fallback_poll_interval_ms", cfg.fallback_poll_interval.count()},
       {"listen_url", cfg.listen_url.empty() ? "unset" : "set"}});
  else if (st.notified && !was)
    st.ctx->log(log_level::info, "notifications arrive again");
  if (!st.notified)
    st.next_fallback = std::chrono::steady_clock::now();
}

// Registers the runner's session on this connection (see
// sql/migrations/0007_sessions.sql); only on a connection that notifications
// reach, which is a session of its own, not a pooled one.
void register_session(session_ptr self) {
  auto& st = self->state;
  auto& cfg = st.ctx->cfg;
  if (!st.takeover() || !st.notified || st.registered)
    return;
  pqxx::nontransaction tx{*st.link.conn};
  st.registered
    = tx.exec_params1(sql::register_session, cfg.node)[0].as<bool>();
  if (!st.registered) {
    st.ctx->log(log_level::warning,
                "another live runner holds this node name's session: "
                "retrying; meanwhile this runner's tasks wait for their "
                "leases if it dies",
                {{"node", cfg.node}});
    return;
  }
  // The record went with the old session, if any.
  st.started->touch();
}

// Hands back the tasks of runners that died; records what started here.
void keep_session(session_ptr self, std::chrono::steady_clock::time_point now) {
  auto& st = self->state;
  auto& cfg = st.ctx->cfg;
  if (!st.takeover() || !st.notified)
    return;
  if (!st.registered) {
    if (now >= st.next_takeover) {
      st.next_takeover = now + cfg.takeover_interval;
      register_session(self);
    }
    return;
  }
  // At most once per record_period: under load the started set changes
  // with every handler.
  if (now >= st.next_record) {
    st.next_record = now + record_period;
    auto on_workers = st.started->take_worker_starts();
    auto ids = st.started->take_changes();
    if (ids || !on_workers.ids.empty())
      record_started(*st.link.conn, cfg.node, ids, on_workers.ids,
                     on_workers.attempts, on_workers.workers);
  }
  if (now < st.next_takeover)
    return;
  st.next_takeover = now + cfg.takeover_interval;
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(
              cfg.takeover_interval)
              .count();
  auto n = pqxx::nontransaction{*st.link.conn}
             .exec_params1(sql::take_over, cfg.node, us)[0]
             .as<int>();
  if (n > 0)
    st.ctx->log(log_level::info,
                "handed back the tasks of runners that are gone",
                {{"tasks", n}});
}

bool connect_session(session_ptr self) {
  auto& st = self->state;
  return connect_or_back_off(
    *st.ctx, "session", st.backoff,
    [&] {
      st.drop();
      st.link.open(*st.ctx, "session");
      st.probe = std::make_unique<notification_collector>(*st.link.conn,
                                                          "cafmq_probe");
      check_notifications(self);
      register_session(self);
    },
    [&] { st.drop(); });
}

void step(session_ptr self) {
  auto& st = self->state;
  if (!st.link.conn) {
    // Without takeover, a connection is kept only while notifications do
    // not arrive (to probe again); the first probe needs one either way.
    if (st.probed && st.notified && !st.takeover())
      return;
    if (!connect_session(self)) {
      self->delayed_send(self, st.backoff, poll_atom::value);
      return;
    }
  }
  try {
    st.guard->enter(st.link.breaker);
    auto now = std::chrono::steady_clock::now();
    if (!st.notified) {
      if (now >= st.next_fallback) {
        st.next_fallback = now + st.ctx->cfg.fallback_poll_interval;
        self->send(st.dispatcher, rescan_atom::value);
      }
      if (now >= st.next_probe) {
        check_notifications(self);
        register_session(self);
      }
    }
    keep_session(self, now);
    // The probe collects notifications only while it probes.
    st.probe->payloads.clear();
    if (st.notified && !st.takeover())
      st.drop();
    st.guard->leave();
  } catch (const std::exception& e) {
    st.guard->leave();
    st.ctx->log(log_level::warning, "session connection lost, reconnecting",
                {{"error", render(from_exception(e))}});
    st.drop();
  }
  auto next = record_period;
  if (!st.notified)
    next = std::min<std::chrono::milliseconds>(
      next, st.ctx->cfg.fallback_poll_interval);
  self->delayed_send(self, next, poll_atom::value);
}

session_actor::behavior_type
session(session_ptr self, context_ptr ctx, dispatcher_actor dispatcher,
        guard_ptr guard, std::shared_ptr<started_attempts> started) {
  name_this_thread("cafmq.session");
  auto& st = self->state;
  st.ctx = std::move(ctx);
  st.dispatcher = std::move(dispatcher);
  st.guard = std::move(guard);
  st.started = std::move(started);
  self->send(self, poll_atom::value);
  return {
    [=](poll_atom) { step(self); },
    [=](peers_atom, dispatcher_actor& x) {
      self->state.dispatcher = std::move(x);
    },
  };
}

} // namespace

session_actor spawn_session(caf::actor_system& sys, context_ptr ctx,
                            dispatcher_actor dispatcher, guard_ptr guard,
                            std::shared_ptr<started_attempts> started) {
  return sys.spawn<caf::detached>(session, std::move(ctx),
                                  std::move(dispatcher), std::move(guard),
                                  std::move(started));
}

} // namespace cafmq::actors
