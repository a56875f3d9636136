// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// The dashboard's database connections: each request borrows one for
// itself (libpqxx connections are never shared between threads), at most
// `max` are open at once, and a connection that broke is dropped.

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "cafmq/connection_options.hpp"
#include "cafmq/error.hpp"

namespace pqxx {
class connection_base;
} // namespace pqxx

namespace cafmq::web {

/// A bounded set of connections to one database.
class connection_pool {
public:
  /// A connection as `open_connection` makes it.
  using connection_ptr = std::shared_ptr<pqxx::connection_base>;

  /// Opens connections to `url` with `opts` on demand, at most `max`.
  connection_pool(std::string url, connection_options opts, int max);

  /// Calls `f` with a connection of its own and returns what it returns;
  /// waits up to `wait` while all `max` are in use.
  template <class F>
  auto with(F f, std::chrono::milliseconds wait = std::chrono::seconds{30})
    -> decltype(f(std::declval<pqxx::connection_base&>())) {
    auto conn = acquire(wait);
    if (!conn)
      return std::move(conn.error());
    auto result = guarded([&] { return f(**conn); });
    release(std::move(*conn),
            result || code_of(result.error()) != errc::database_unavailable);
    return result;
  }

  /// Borrows a connection: an idle one, or a new one.
  caf::expected<connection_ptr> acquire(std::chrono::milliseconds wait);

  /// Returns a connection; `keep` false (or a closed one) drops it.
  void release(connection_ptr conn, bool keep);

private:
  std::string url_;
  connection_options opts_;
  int max_;
  std::mutex mtx_;
  std::condition_variable cv_;
  int in_use_ = 0;
  std::vector<connection_ptr> idle_;
};

} // namespace cafmq::web
