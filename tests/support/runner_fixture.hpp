// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// A db_fixture for tests that run a runner in this process (e2e runtime,
// fault lost_messages).

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "cafmq/actors/runner.hpp"
#include "cafmq/current_task.hpp"
#include "cafmq/error.hpp"
#include "support/db_fixture.hpp"

namespace cafmq::test {

/// A handler that blocks its thread until `release` is set.
inline task_handler blocks_until(std::atomic<bool>& release) {
  return [&release](current_task&) {
    while (!release)
      std::this_thread::sleep_for(std::chrono::milliseconds{1});
    return caf::error{};
  };
}

struct runner_fixture : db_fixture {
  // Counts tasks in `state`.
  int count(const std::string& state) {
    return query_value<int>("SELECT count(*) FROM cafmq.tasks WHERE state = '"
                            + state + "'");
  }

  // Waits until `pred` holds; fails the test once `limit` passed without.
  template <class Pred>
  void wait_for(Pred pred,
                std::chrono::seconds limit = std::chrono::seconds{120}) {
    auto until = std::chrono::steady_clock::now() + limit;
    while (!pred()) {
      if (std::chrono::steady_clock::now() > until)
        CAF_FAIL("the awaited condition did not hold within " << limit.count()
                                                              << " s");
      std::this_thread::sleep_for(std::chrono::milliseconds{10});
    }
  }

  actors::runner_config config(std::shared_ptr<registry> tasks) {
    actors::runner_config cfg;
    cfg.database_url = url;
    cfg.tasks = std::move(tasks);
    cfg.min_concurrency = 2;
    cfg.max_concurrency = 4;
    cfg.max_poll_wait
      = std::chrono::hours{1}; // only notifications and rescans wake it
    return cfg;
  }

  std::unique_ptr<actors::runner> start(const actors::runner_config& cfg) {
    auto r = actors::runner::start(cfg);
    if (!r)
      CAF_FAIL("cannot start the runner: " << render(r.error()));
    return std::move(*r);
  }
};

} // namespace cafmq::test
