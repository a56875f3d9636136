#include "cafmq/actors/listener.hpp"

#include <caf/all.hpp>
#include <pqxx/pqxx>

#include "cafmq/connection_breaker.hpp"
#include "cafmq/connection_options.hpp"
#include "cafmq/error.hpp"
#include "cafmq/sql.hpp"

namespace cafmq::actors {

namespace {

using namespace std::chrono_literals;

/// Longest block in await_notification: bounds how late a message is seen.
constexpr auto poll_period = 50ms;
/// A silent connection is pinged this often to notice that it died.
constexpr auto ping_period = 2s;

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
  std::shared_ptr<pqxx::connection_base> conn; // first: destroyed last
  std::shared_ptr<connection_breaker> breaker;
  std::unique_ptr<collector> ready;
  std::unique_ptr<collector> cancel;
  std::chrono::steady_clock::time_point last_ping;
  std::chrono::milliseconds backoff{0};
  static inline const char* name = "cafmq.listener";

  void drop() {
    ready.reset();
    cancel.reset();
    if (breaker)
      breaker->release();
    breaker.reset();
    conn.reset();
  }
};

using listener_ptr = listener_actor::stateful_pointer<listener_state>;

bool connect(listener_ptr self) {
  auto& st = self->state;
  try {
    st.drop();
    auto opened = open_connection(st.ctx->cfg.database_url,
                                  connection_for(st.ctx->cfg, "listen"));
    if (!opened)
      throw std::runtime_error(render(opened.error()));
    st.conn = std::move(*opened);
    if (auto breaker = connection_breaker::make(st.conn->sock()))
      st.breaker = std::move(*breaker);
    st.ready = std::make_unique<collector>(*st.conn, "cafmq_ready");
    st.cancel = std::make_unique<collector>(*st.conn, "cafmq_cancel");
    st.last_ping = std::chrono::steady_clock::now();
    return true;
  } catch (const std::exception& e) {
    st.drop();
    st.backoff
      = std::min(std::chrono::milliseconds{5000},
                 std::max(std::chrono::milliseconds{100}, st.backoff * 2));
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
    pqxx::nontransaction tx{*st.conn};
    auto rows = tx.exec_params(sql::task_channel, payload);
    if (rows.empty())
      continue;
    self->send(st.dispatcher, cancel_atom::value, rows[0][0].as<std::string>(),
               rows[0][1].as<std::string>(), *id);
  }
}

void poll(listener_ptr self) {
  auto& st = self->state;
  if (!st.conn) {
    if (!connect(self)) {
      self->delayed_send(self, st.backoff, poll_atom::value);
      return;
    }
    st.backoff = 0ms;
    self->send(st.dispatcher, rescan_atom::value);
  }
  try {
    st.guard->enter(st.breaker);
    auto us
      = std::chrono::duration_cast<std::chrono::microseconds>(poll_period);
    st.conn->await_notification(0, us.count());
    deliver(self);
    auto now = std::chrono::steady_clock::now();
    if (now - st.last_ping > ping_period) {
      pqxx::nontransaction{*st.conn}.exec("SELECT 1");
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
