// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// Gives each test a fresh, migrated database on the cluster that
// CAFMQ_DATABASE_URL names, and drops it afterwards, so db tests run in
// parallel without seeing each other.

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include <pqxx/pqxx>

#include "cafmq/detail/queue_connection.hpp"

namespace cafmq::test {

/// CAFMQ_DATABASE_URL, or an exception explaining how to set it.
std::string admin_url();

/// `url` with its database replaced by `dbname`.
std::string with_database(const std::string& url, const std::string& dbname);

/// The names of the history's daily partitions in `conn`'s database, oldest
/// first, space-separated ("" if none).
std::string history_days(pqxx::connection_base& conn);

struct db_fixture {
  db_fixture();
  ~db_fixture();

  /// A new connection to the test database.
  std::unique_ptr<pqxx::connection> connect() const;

  /// A new queue connection (a poller of its own) to the test database.
  std::shared_ptr<queue_connection> poller() const;

  /// A new queue connection to `at` with `opts`.
  std::shared_ptr<queue_connection>
  open_poller(const std::string& at, const connection_options& opts = {}) const;

  /// `url` over TCP to 127.0.0.1 when it names a Unix socket or no host:
  /// what TCP settings need.
  std::string tcp_url() const;

  /// Runs one statement on `conn` and returns the first column of row 0.
  template <class T>
  T query_value(const std::string& sql) {
    pqxx::nontransaction tx{*conn};
    return tx.exec1(sql)[0].as<T>();
  }

  /// Polls until no task is pending or running, at most `limit`; true if
  /// none is.
  bool wait_until_drained(std::chrono::seconds limit) {
    auto until = std::chrono::steady_clock::now() + limit;
    while (query_value<int>("SELECT count(*) FROM cafmq.tasks WHERE state IN "
                            "('pending', 'running')")
           > 0) {
      if (std::chrono::steady_clock::now() > until)
        return false;
      std::this_thread::sleep_for(std::chrono::milliseconds{10});
    }
    return true;
  }

  std::string dbname;
  std::string url;
  std::unique_ptr<pqxx::connection> conn;
};

} // namespace cafmq::test
