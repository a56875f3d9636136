// SPDX-License-Identifier: BSD-3-Clause
// `cafmq-e2e pickup`: pickup latency through a connection pooler
// (tests/scripts/pgbouncer.sh): migrates through DIRECT_URL, starts a
// runner whose work goes through WORK_URL (and whose listening connection
// uses LISTEN_URL, if given), then spawns N tasks through WORK_URL, one
// every 50 ms on an idle runner, and prints the spawn -> handler start
// latency:
//
//   pickup p50_ms=... max_ms=...
//
//   cafmq-e2e pickup DIRECT_URL WORK_URL N [LISTEN_URL]

#include <algorithm>
#include <condition_variable>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>

#include <pqxx/pqxx>

#include "cafmq/actors/runner.hpp"
#include "cafmq/current_task.hpp"
#include "cafmq/error.hpp"
#include "cafmq/migrate.hpp"
#include "cafmq/spawn.hpp"

#include "common.hpp"

namespace cafmq::e2e {

namespace {

using clock_type = std::chrono::steady_clock;

std::mutex mtx;
std::condition_variable cv;
std::map<int, clock_type::time_point> started;

caf::error pick(current_task& task) {
  auto now = clock_type::now();
  auto i = std::stoi(task.raw_json().value_or("0"));
  std::lock_guard<std::mutex> guard{mtx};
  started[i] = now;
  cv.notify_all();
  return caf::none;
}

} // namespace

int run_pickup(const arguments& args) {
  auto& direct = args[0];
  auto& work = args[1];
  int n = std::stoi(args[2]);
  {
    pqxx::connection conn{direct};
    if (auto migrated = migrate(conn); !migrated)
      return fail("migrate", migrated.error());
  }
  auto tasks = std::make_shared<registry>();
  tasks->add({"pick", pick, {}});
  actors::runner_config cfg;
  cfg.database_url = work;
  if (args.size() == 4)
    cfg.listen_url = args[3];
  cfg.migrate = false;
  // The defaults: PgBouncer refuses the startup parameter `options`, and
  // the runner connects without it (one warning).
  cfg.tasks = tasks;
  // Nothing but a notification (or, without one, the fallback poll) wakes
  // an idle runner: a pickup that works shows which of the two did.
  cfg.max_poll_wait = std::chrono::hours{1};
  auto runner = actors::runner::start(cfg);
  if (!runner)
    return fail("runner", runner.error());
  // Past the notification probe (up to 1 s) and the first empty claims.
  std::this_thread::sleep_for(std::chrono::milliseconds{1500});
  pqxx::connection conn{work};
  std::vector<double> ms;
  for (int i = 0; i < n; ++i) {
    auto t0 = clock_type::now();
    auto spawned
      = spawn_builder{"pick"}.raw_json(std::to_string(i)).spawn(conn);
    if (!spawned)
      return fail("spawn", spawned.error());
    std::unique_lock<std::mutex> guard{mtx};
    if (!cv.wait_for(guard, std::chrono::seconds{30},
                     [&] { return started.count(i) > 0; })) {
      std::cerr << "task " << i << " did not start within 30 s\n";
      return 1;
    }
    ms.push_back(
      std::chrono::duration<double, std::milli>(started[i] - t0).count());
    guard.unlock();
    std::this_thread::sleep_for(std::chrono::milliseconds{50});
  }
  (*runner)->stop();
  std::sort(ms.begin(), ms.end());
  std::cout << "pickup p50_ms=" << ms[ms.size() / 2] << " max_ms=" << ms.back()
            << std::endl;
  return 0;
}

} // namespace cafmq::e2e
