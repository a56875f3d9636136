// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/actors/detail/listener.hpp"

#include <algorithm>
#include <string_view>
#include <utility>

#include <caf/all.hpp>
#include <pqxx/pqxx>

#include "cafmq/connection_options.hpp"
#include "cafmq/error.hpp"
#include "cafmq/sql.hpp"
#include "runtime/listening_connection.hpp"
#include "runtime/thread_name.hpp"

namespace cafmq::actors {

namespace {

using namespace std::chrono_literals;

/// Longest block in await_notification: bounds how late a message is seen.
constexpr auto poll_period = 50ms;
/// A silent connection is pinged this often to notice that it died.
constexpr auto ping_period = 2s;

struct listener_state {
  context_ptr ctx;
  dispatcher_actor dispatcher;
  guard_ptr guard;
  listening_connection link; // first: closed last
  std::unique_ptr<notification_collector> ready;
  std::unique_ptr<notification_collector> cancel;
  std::chrono::steady_clock::time_point last_ping;
  std::chrono::milliseconds backoff{0};
  static inline const char* name = "cafmq.listener";

  void drop() {
    ready.reset();
    cancel.reset();
    link.close();
  }
};

using listener_ptr = listener_actor::stateful_pointer<listener_state>;

bool connect(listener_ptr self) {
  auto& st = self->state;
  return connect_or_back_off(
    *st.ctx, "listener", st.backoff,
    [&] {
      st.drop();
      st.link.open(*st.ctx, "listen");
      st.ready = std::make_unique<notification_collector>(*st.link.conn,
                                                          "cafmq_ready");
      st.cancel = std::make_unique<notification_collector>(*st.link.conn,
                                                           "cafmq_cancel");
      st.last_ping = std::chrono::steady_clock::now();
    },
    [&] { st.drop(); });
}

// A wake-up's payload: the channel name, and from a spawn, maybe the ids
// of its new tasks after '\x1f', comma-separated (cafmq.notify_spawned).
// Ids that do not parse are left out: the claim by id is only a shortcut.
std::pair<std::string, std::vector<uuid>> parse_ready(const std::string& x) {
  auto sep = x.find('\x1f');
  if (sep == std::string::npos)
    return {x, {}};
  std::vector<uuid> ids;
  for (auto i = sep + 1; i <= x.size();) {
    auto end = std::min(x.find(',', i), x.size());
    if (auto id = uuid::parse(std::string_view{x}.substr(i, end - i)))
      ids.push_back(*id);
    i = end + 1;
  }
  return {x.substr(0, sep), std::move(ids)};
}

// Sends what the last wait collected: wake-ups, and cancels with the
// channel of their task.
void deliver(listener_ptr self) {
  auto& st = self->state;
  for (auto& payload : st.ready->payloads) {
    auto [name, ids] = parse_ready(payload);
    self->send(st.dispatcher, ready_atom::value, std::move(name),
               std::move(ids));
  }
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
    // What was spawned or cancelled while no LISTEN was active sent its
    // notifications to nobody: claim, and renew at once (the renewal
    // reports every cancel requested for a held attempt).
    self->send(st.dispatcher, renew_atom::value);
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
  name_this_thread("cafmq.listener");
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
