// SPDX-License-Identifier: BSD-3-Clause
// Pickup latency through a connection pooler (tests/scripts/pgbouncer.sh):
// migrates through DIRECT_URL, starts a runner whose work goes through
// WORK_URL (and whose listening connection uses LISTEN_URL, if given), then
// spawns N tasks through WORK_URL, one every 50 ms on an idle runner, and
// prints the spawn -> handler start latency:
//
//   pickup p50_ms=... max_ms=...
//
//   cafmq-e2e-pickup DIRECT_URL WORK_URL N [LISTEN_URL]

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

namespace {

using clock_type = std::chrono::steady_clock;

std::mutex mtx;
std::condition_variable cv;
std::map<int, clock_type::time_point> started;

} // namespace

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    std::cerr << "usage: cafmq-e2e-pickup DIRECT_URL WORK_URL N [LISTEN_URL]\n";
    return 2;
  }
  std::string direct = argv[1];
  std::string work = argv[2];
  int n = std::stoi(argv[3]);
  {
    pqxx::connection conn{direct};
    if (auto migrated = cafmq::migrate(conn); !migrated) {
      std::cerr << "migrate: " << cafmq::render(migrated.error()) << '\n';
      return 1;
    }
  }
  auto tasks = std::make_shared<cafmq::registry>();
  tasks->add({"pick",
              [](cafmq::current_task& task) -> caf::error {
                auto now = clock_type::now();
                auto i = std::stoi(task.raw_json().value_or("0"));
                std::lock_guard<std::mutex> guard{mtx};
                started[i] = now;
                cv.notify_all();
                return caf::none;
              },
              {}});
  cafmq::actors::runner_config cfg;
  cfg.database_url = work;
  if (argc == 5)
    cfg.listen_url = argv[4];
  cfg.migrate = false;
  // PgBouncer refuses the startup parameter `options`.
  cfg.connection.send_session_settings = false;
  cfg.tasks = tasks;
  auto runner = cafmq::actors::runner::start(cfg);
  if (!runner) {
    std::cerr << "runner: " << cafmq::render(runner.error()) << '\n';
    return 1;
  }
  // Past the notification probe (up to 1 s) and the first empty claims.
  std::this_thread::sleep_for(std::chrono::milliseconds{1500});
  pqxx::connection conn{work};
  std::vector<double> ms;
  for (int i = 0; i < n; ++i) {
    auto t0 = clock_type::now();
    auto spawned
      = cafmq::spawn_builder{"pick"}.raw_json(std::to_string(i)).spawn(conn);
    if (!spawned) {
      std::cerr << "spawn: " << cafmq::render(spawned.error()) << '\n';
      return 1;
    }
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
