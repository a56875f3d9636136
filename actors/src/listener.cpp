// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/actors/detail/listener.hpp"

#include <caf/all.hpp>
#include <pqxx/pqxx>

#include "cafmq/connection_options.hpp"
#include "cafmq/error.hpp"
#include "cafmq/sql.hpp"
#include "listening_connection.hpp"
#include "started_attempts.hpp"

namespace cafmq::actors {

namespace {

using namespace std::chrono_literals;

/// Longest block in await_notification: bounds how late a message is seen.
constexpr auto poll_period = 50ms;
/// A silent connection is pinged this often to notice that it died.
constexpr auto ping_period = 2s;
/// How long the probe notification may take to arrive.
constexpr auto probe_timeout = 1s;
/// While notifications do not arrive, the probe is tried again this often.
constexpr auto reprobe_period = 30s;
/// The started attempts are written at most this often.
constexpr auto record_period = 50ms;

// Collects the payloads of one LISTEN channel.
struct collector : pqxx::notification_receiver {
  collector(pqxx::connection_base& c, const std::string& channel)
    : pqxx::notification_receiver(c, channel) {
    // nop
  }

  void operator()(const std::string& payload, int) override {
    payloads.push_back(payload);
  }

  std::vector<std::string> payloads;
};

struct listener_state {
  context_ptr ctx;
  dispatcher_actor dispatcher;
  guard_ptr guard;
  listening_connection link; // first: closed last
  std::unique_ptr<collector> ready;
  std::unique_ptr<collector> cancel;
  std::unique_ptr<collector> probe;
  std::chrono::steady_clock::time_point last_ping;
  std::chrono::milliseconds backoff{0};
  // Notifications sent through the work connections arrive here; false:
  // the dispatcher is woken every fallback_poll_interval instead.
  bool notified = true;
  std::chrono::steady_clock::time_point next_probe;
  std::chrono::steady_clock::time_point next_fallback;
  // This connection holds the runner's session (its lock).
  bool registered = false;
  std::chrono::steady_clock::time_point next_takeover;
  std::chrono::steady_clock::time_point next_record;
  static inline const char* name = "cafmq.listener";

  void drop() {
    ready.reset();
    cancel.reset();
    probe.reset();
    registered = false;
    link.close();
  }
};

using listener_ptr = listener_actor::stateful_pointer<listener_state>;

// Sends a notification through a work connection (database_url, which may
// go through a pooler) and waits for it here. Behind a pooler in transaction
// mode it never arrives: LISTEN holds no server connection of its own.
bool probe_notifications(listener_ptr self) {
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
void check_notifications(listener_ptr self) {
  auto& st = self->state;
  auto& cfg = st.ctx->cfg;
  auto was = st.notified;
  st.notified = probe_notifications(self);
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
void register_session(listener_ptr self) {
  auto& st = self->state;
  auto& cfg = st.ctx->cfg;
  if (cfg.takeover_interval.count() == 0 || !st.notified || st.registered)
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
  st.ctx->started->touch();
}

// Hands back the tasks of runners that died; records what started here.
void keep_session(listener_ptr self,
                  std::chrono::steady_clock::time_point now) {
  auto& st = self->state;
  auto& cfg = st.ctx->cfg;
  if (cfg.takeover_interval.count() == 0 || !st.notified)
    return;
  if (!st.registered) {
    if (now >= st.next_takeover) {
      st.next_takeover = now + cfg.takeover_interval;
      register_session(self);
    }
    return;
  }
  // At most once per record_period: under load the started set changes
  // with every handler, and notifications make the polls short.
  if (now >= st.next_record) {
    st.next_record = now + record_period;
    if (auto ids = st.ctx->started->take_changes()) {
      std::string arr = "{";
      for (auto& id : *ids) {
        if (arr.size() > 1)
          arr += ',';
        arr += to_string(id);
      }
      arr += '}';
      pqxx::nontransaction{*st.link.conn}.exec_params(sql::record_started,
                                                      cfg.node, arr);
    }
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

bool connect(listener_ptr self) {
  auto& st = self->state;
  try {
    st.drop();
    st.link.open(*st.ctx, "listen");
    st.ready = std::make_unique<collector>(*st.link.conn, "cafmq_ready");
    st.cancel = std::make_unique<collector>(*st.link.conn, "cafmq_cancel");
    st.probe = std::make_unique<collector>(*st.link.conn, "cafmq_probe");
    st.last_ping = std::chrono::steady_clock::now();
    check_notifications(self);
    register_session(self);
    return true;
  } catch (const std::exception& e) {
    st.drop();
    st.backoff = listening_connection::backoff_after(st.backoff);
    st.ctx->log(
      log_level::warning, "listener cannot connect, retrying",
      {{"retry_ms", st.backoff.count()}, {"error", render(from_exception(e))}});
    return false;
  }
}

// Sends what the last wait collected: wake-ups, and cancels with the
// channel of their task.
void deliver(listener_ptr self) {
  auto& st = self->state;
  for (auto& name : st.ready->payloads)
    self->send(st.dispatcher, ready_atom::value, name);
  st.ready->payloads.clear();
  auto ids = std::move(st.cancel->payloads);
  st.cancel->payloads.clear();
  for (auto& payload : ids) {
    auto id = uuid::parse(payload);
    if (!id)
      continue;
    pqxx::nontransaction tx{*st.link.conn};
    auto rows = tx.exec_params(sql::task_channel, payload);
    if (rows.empty())
      continue;
    self->send(st.dispatcher, cancel_atom::value, rows[0][0].as<std::string>(),
               rows[0][1].as<std::string>(), *id);
  }
}

void poll(listener_ptr self) {
  auto& st = self->state;
  if (!st.link.conn) {
    if (!connect(self)) {
      self->delayed_send(self, st.backoff, poll_atom::value);
      return;
    }
    st.backoff = 0ms;
    self->send(st.dispatcher, rescan_atom::value);
  }
  try {
    st.guard->enter(st.link.breaker);
    auto us
      = std::chrono::duration_cast<std::chrono::microseconds>(poll_period);
    st.link.conn->await_notification(0, us.count());
    deliver(self);
    auto now = std::chrono::steady_clock::now();
    if (now - st.last_ping > ping_period) {
      pqxx::nontransaction{*st.link.conn}.exec("SELECT 1");
      st.last_ping = now;
    }
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
    st.guard->leave();
  } catch (const std::exception& e) {
    st.guard->leave();
    st.ctx->log(log_level::warning, "listener connection lost, reconnecting",
                {{"error", render(from_exception(e))}});
    st.drop();
  }
  self->send(self, poll_atom::value);
}

listener_actor::behavior_type listener(listener_ptr self, context_ptr ctx,
                                       dispatcher_actor dispatcher,
                                       guard_ptr guard) {
  auto& st = self->state;
  st.ctx = std::move(ctx);
  st.dispatcher = std::move(dispatcher);
  st.guard = std::move(guard);
  self->send(self, poll_atom::value);
  return {
    [=](poll_atom) { poll(self); },
    [=](peers_atom, dispatcher_actor& x) {
      self->state.dispatcher = std::move(x);
      self->send(self->state.dispatcher, rescan_atom::value);
    },
  };
}

} // namespace

listener_actor spawn_listener(caf::actor_system& sys, context_ptr ctx,
                              dispatcher_actor dispatcher, guard_ptr guard) {
  return sys.spawn<caf::detached>(listener, std::move(ctx),
                                  std::move(dispatcher), std::move(guard));
}

} // namespace cafmq::actors
