#include "cafmq/actors/listener.hpp"

#include <caf/all.hpp>
#include <pqxx/pqxx>

#include "cafmq/actors/messages.hpp"
#include "cafmq/error.hpp"

namespace cafmq::actors {

namespace {

using namespace std::chrono_literals;

/// Longest block in await_notification: bounds how late an exit is seen.
constexpr auto poll_period = 50ms;
/// A silent connection is pinged this often to notice that it died.
constexpr auto ping_period = 2s;

// Forwards notifications on one channel as (Atom, payload) messages.
template <class Atom>
struct forwarder : pqxx::notification_receiver {
  forwarder(pqxx::connection_base& c, const std::string& channel,
            caf::actor target)
    : pqxx::notification_receiver(c, channel), target(std::move(target)) {}

  void operator()(const std::string& payload, int) override {
    caf::anon_send(target, Atom::value, payload);
  }

  caf::actor target;
};

struct listener_state {
  std::unique_ptr<pqxx::connection> conn; // declared first: destroyed last
  std::unique_ptr<forwarder<ready_atom>> ready;
  std::unique_ptr<forwarder<cancel_atom>> cancel;
  std::chrono::steady_clock::time_point last_ping;
  std::chrono::milliseconds backoff{0};
  static inline const char* name = "cafmq.listener";
};

using listener_actor = caf::stateful_actor<listener_state>;

bool connect(listener_actor* self, const std::string& url,
             const caf::actor& dispatcher) {
  auto& st = self->state;
  try {
    st.ready.reset();
    st.cancel.reset();
    st.conn = std::make_unique<pqxx::connection>(url);
    st.ready = std::make_unique<forwarder<ready_atom>>(*st.conn, "cafmq_ready",
                                                       dispatcher);
    st.cancel = std::make_unique<forwarder<cancel_atom>>(
      *st.conn, "cafmq_cancel", dispatcher);
    st.last_ping = std::chrono::steady_clock::now();
    return true;
  } catch (const std::exception& e) {
    st.ready.reset();
    st.cancel.reset();
    st.conn.reset();
    aout(self) << "cafmq: listener cannot connect, retrying: "
               << render(from_exception(e)) << std::endl;
    return false;
  }
}

caf::behavior listener(listener_actor* self, std::string url,
                       caf::actor dispatcher) {
  // What was spawned before LISTEN took effect sent no notification we
  // saw: claim once more now that we listen (as after a reconnect).
  if (connect(self, url, dispatcher))
    self->send(dispatcher, rescan_atom::value);
  self->send(self, poll_atom::value, 0);
  return {
    [=](poll_atom, int) {
      auto& st = self->state;
      if (!st.conn) {
        if (!connect(self, url, dispatcher)) {
          st.backoff = std::min(std::chrono::milliseconds{5000},
                                std::max(100ms, st.backoff * 2));
          self->delayed_send(self, st.backoff, poll_atom::value, 0);
          return;
        }
        st.backoff = 0ms;
        self->send(dispatcher, rescan_atom::value);
      }
      try {
        auto us
          = std::chrono::duration_cast<std::chrono::microseconds>(poll_period)
              .count();
        st.conn->await_notification(0, us);
        auto now = std::chrono::steady_clock::now();
        if (now - st.last_ping > ping_period) {
          pqxx::nontransaction{*st.conn}.exec("SELECT 1");
          st.last_ping = now;
        }
      } catch (const std::exception& e) {
        aout(self) << "cafmq: listener connection lost, reconnecting: "
                   << render(from_exception(e)) << std::endl;
        st.ready.reset();
        st.cancel.reset();
        st.conn.reset();
      }
      self->send(self, poll_atom::value, 0);
    },
  };
}

} // namespace

caf::actor spawn_listener(caf::actor_system& sys, std::string url,
                          caf::actor dispatcher) {
  return sys.spawn<caf::detached>(listener, std::move(url),
                                  std::move(dispatcher));
}

} // namespace cafmq::actors
