#include "cafmq/actors/database.hpp"

#include <caf/all.hpp>

#include "cafmq/actors/messages.hpp"
#include "cafmq/client.hpp"
#include "cafmq/error.hpp"
#include "cafmq/queue_connection.hpp"

namespace cafmq::actors {

namespace {

struct database_state {
  std::string url;
  std::shared_ptr<queue_connection> conn;

  // Runs `f` on the connection, opening it first if needed; drops the
  // connection when it broke so the next call reconnects.
  template <class F>
  auto with_connection(F f) -> decltype(f(*conn)) {
    if (!conn) {
      auto opened = queue_connection::open(url);
      if (!opened)
        return std::move(opened.error());
      conn = std::move(*opened);
    }
    auto result = f(*conn);
    if (!result && code_of(result.error()) == errc::database_unavailable)
      conn.reset();
    return result;
  }
};

// Replies `true` for success: CAF 0.17 cannot reply expected<unit_t>.
caf::expected<bool> to_reply(caf::error err) {
  if (err)
    return err;
  return true;
}

} // namespace

caf::behavior database(caf::event_based_actor* self, std::string url,
                       std::shared_ptr<queue_connection> conn) {
  auto st = std::make_shared<database_state>();
  st->url = std::move(url);
  st->conn = std::move(conn);
  self->set_default_handler(caf::print_and_drop);
  return {
    [st](open_atom) {
      // Connects and completes nothing: the first real write then finds
      // the connection open and the tables and plans loaded.
      st->with_connection([](queue_connection& c) {
        return c.complete(std::vector<attempt_ref>{});
      });
    },
    [st](claim_atom, const claim_request& req) {
      return st->with_connection(
        [&](queue_connection& c) { return c.claim(req); });
    },
    [st](record_atom, const write_batch& batch) {
      return st->with_connection([&](queue_connection& c) {
        return to_reply(
          c.record(batch.completed, batch.failed, batch.released));
      });
    },
    [st](renew_atom, const std::vector<attempt_ref>& xs,
         std::chrono::milliseconds lease) {
      return st->with_connection(
        [&](queue_connection& c) { return c.keep_alive(xs, lease); });
    },
    [st](prune_atom, std::chrono::milliseconds retention, int limit) {
      return st->with_connection([&](queue_connection& c) {
        return prune(c.connection(), retention, limit);
      });
    },
    [st](expire_atom, int limit) {
      return st->with_connection([&](queue_connection& c) {
        return expire_reservations(c.connection(), limit);
      });
    },
    [st](checkpt_atom, const attempt_ref& x, const checkpoint& cp) {
      return st->with_connection(
        [&](queue_connection& c) { return to_reply(c.checkpoint(x, cp)); });
    },
  };
}

} // namespace cafmq::actors
