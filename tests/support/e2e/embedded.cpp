// SPDX-License-Identifier: BSD-3-Clause
// `cafmq-e2e embedded`: an application that embeds the runtime in its own
// actor system with spawn_runner, the first use the design card names. Its
// task "ignore_cancel" ignores its cancel for an hour. Once one runs, the
// application stops the runtime (stop_atom; shutdown timeout 5 s, handler
// grace 500 ms) and returns from main, which destroys the actor system:
// neither may wait for the handler. Just before the stop it publishes
// DIR/stopping with the monotonic clock's time in nanoseconds
// (CLOCK_MONOTONIC, the same in every process), so that a test measures
// the time to the process's exit; then it prints "embedded: stopped (ok)"
// or "embedded: stopped (failed)".
//
//   cafmq-e2e embedded URL DIR

#include <atomic>
#include <iostream>
#include <thread>

#include <caf/all.hpp>

#include "cafmq/actors/log.hpp"
#include "cafmq/actors/protocol.hpp"
#include "cafmq/actors/runner.hpp"

#include "common.hpp"

namespace cafmq::e2e {

int run_embedded(const arguments& args) {
  auto dir = args[1];
  caf::actor_system_config sys_cfg;
  actors::add_message_types(sys_cfg);
  caf::actor_system sys{sys_cfg};
  auto started = std::make_shared<std::atomic<bool>>(false);
  auto tasks = std::make_shared<registry>();
  tasks->add({"ignore_cancel",
              [started](current_task&) -> caf::error {
                *started = true;
                auto until
                  = std::chrono::steady_clock::now() + std::chrono::hours{1};
                while (std::chrono::steady_clock::now() < until)
                  std::this_thread::sleep_for(std::chrono::milliseconds{10});
                return caf::none;
              },
              {}});
  actors::runner_config cfg;
  cfg.database_url = args[0];
  cfg.node = "embedded";
  cfg.tasks = tasks;
  cfg.shutdown_timeout = std::chrono::seconds{5};
  cfg.handler_grace = std::chrono::milliseconds{500};
  // Each line with the milliseconds since the start, for the test's output.
  auto t0 = std::chrono::steady_clock::now();
  cfg.log = [t0, sink = actors::stderr_sink()](const actors::log_record& x) {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - t0);
    std::cerr << "+" << ms.count() << " ms ";
    sink(x);
  };
  auto runtime = actors::spawn_runner(sys, cfg);
  if (!runtime)
    return fail("embedded", runtime.error());
  while (!*started)
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
  auto now = std::chrono::steady_clock::now().time_since_epoch();
  publish(dir + "/stopping",
          std::to_string(
            std::chrono::duration_cast<std::chrono::nanoseconds>(now).count()));
  bool ok = false;
  caf::scoped_actor self{sys};
  self->request(*runtime, std::chrono::minutes{1}, actors::stop_atom::value)
    .receive([&](bool x) { ok = x; }, [](caf::error&) {});
  std::cout << "embedded: stopped (" << (ok ? "ok" : "failed") << ")"
            << std::endl;
  return 0;
}

} // namespace cafmq::e2e
