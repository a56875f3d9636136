// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// A connection that LISTENs: the listener's and the watch service's. It is
// opened on listen-url (database-url when unset: notifications need a
// session of their own, not a pooled one), counted in the metrics while
// open, and has a breaker for the runtime's watchdog.

#include <chrono>
#include <memory>

#include "cafmq/actors/detail/context.hpp"
#include "cafmq/actors/detail/runtime_metrics.hpp"

namespace pqxx {
class connection_base;
} // namespace pqxx

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

} // namespace cafmq::actors
