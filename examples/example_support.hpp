// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// What the examples share: the database URL and waiting for tasks to end.

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <pqxx/pqxx>

#include "cafmq/actors/runner.hpp"
#include "cafmq/client.hpp"
#include "cafmq/error.hpp"

namespace example {

/// CAFMQ_DATABASE_URL (scripts/example.sh sets it to the private cluster).
inline std::string database_url() {
  auto url = std::getenv("CAFMQ_DATABASE_URL");
  if (url == nullptr) {
    std::cerr << "set CAFMQ_DATABASE_URL or run through scripts/example.sh\n";
    std::exit(2);
  }
  return url;
}

/// Waits until every task in `ids` is completed, failed or cancelled.
inline bool wait_until_finished(pqxx::connection_base& conn,
                                const std::vector<cafmq::uuid>& ids,
                                std::chrono::seconds timeout
                                = std::chrono::seconds{60}) {
  auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    bool done = true;
    for (auto& id : ids) {
      auto st = cafmq::status(conn, id);
      done = done && st && cafmq::is_final(st->state);
    }
    if (done)
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds{20});
  }
  return false;
}

/// Starts a runner for `tasks` on `url`, or exits with the error.
inline std::unique_ptr<cafmq::actors::runner>
start_runner(const std::string& url, std::shared_ptr<cafmq::registry> tasks,
             int min_concurrency = 16, int max_concurrency = 32) {
  cafmq::actors::runner_config cfg;
  cfg.database_url = url;
  cfg.tasks = std::move(tasks);
  cfg.min_concurrency = min_concurrency;
  cfg.max_concurrency = max_concurrency;
  auto runner = cafmq::actors::runner::start(cfg);
  if (!runner) {
    std::cerr << "example: " << cafmq::render(runner.error()) << '\n';
    std::exit(1);
  }
  return std::move(*runner);
}

/// Prints an error and returns the exit code for it.
inline int fail(const caf::error& err) {
  std::cerr << "example: " << cafmq::render(err) << '\n';
  return 1;
}

} // namespace example
