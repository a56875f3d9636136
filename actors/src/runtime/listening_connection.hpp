// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// A connection that LISTENs: the listener's, the session's and the watch
// service's. It is
// opened on listen-url (database-url when unset: notifications need a
// session of their own, not a pooled one), counted in the metrics while
// open, and has a breaker for the runtime's watchdog.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <pqxx/notification>

#include "cafmq/actors/detail/context.hpp"
#include "cafmq/actors/detail/runtime_metrics.hpp"
#include "cafmq/error.hpp"

namespace cafmq {
class connection_breaker;
} // namespace cafmq

namespace cafmq::actors {

struct listening_connection {
  std::shared_ptr<pqxx::connection_base> conn;
  std::shared_ptr<connection_breaker> breaker;
  connection_token counted;

  /// Opens the connection as "cafmq ROLE"; throws what opening fails with.
  void open(const runtime_context& ctx, const char* role);

  /// Closes it; nothing if it is closed.
  void close();

  /// The wait before the next try, after a failed one that waited `last`:
  /// doubled, from 100 ms up to 5 s.
  static std::chrono::milliseconds
  backoff_after(std::chrono::milliseconds last);
};

/// Runs `connect` (which opens a connection and what listens on it); if it
/// throws, runs `drop`, doubles `backoff` (listening_connection::
/// backoff_after), logs "WHO cannot connect, retrying" and returns false.
/// A success resets `backoff`.
template <class Connect, class Drop>
bool connect_or_back_off(const runtime_context& ctx, const std::string& who,
                         std::chrono::milliseconds& backoff, Connect connect,
                         Drop drop) {
  try {
    connect();
    backoff = std::chrono::milliseconds{0};
    return true;
  } catch (const std::exception& e) {
    drop();
    backoff = listening_connection::backoff_after(backoff);
    ctx.log(
      log_level::warning, who + " cannot connect, retrying",
      {{"retry_ms", backoff.count()}, {"error", render(from_exception(e))}});
    return false;
  }
}

/// Collects the payloads of one LISTEN channel.
struct notification_collector : pqxx::notification_receiver {
  notification_collector(pqxx::connection_base& c, const std::string& channel)
    : pqxx::notification_receiver(c, channel) {
    // nop
  }

  void operator()(const std::string& payload, int) override {
    payloads.push_back(payload);
  }

  std::vector<std::string> payloads;
};

} // namespace cafmq::actors
