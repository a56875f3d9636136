// SPDX-License-Identifier: BSD-3-Clause
// A complete program on cafmq: it defines a task, starts a runner, spawns
// the task and waits until it has run. docs/install.md shows this file;
// tests/scripts/consumer.sh builds it against an installed tree, the
// Debian package and add_subdirectory.

#include <chrono>
#include <cstdlib>
#include <future>
#include <iostream>
#include <memory>
#include <string>

#include <pqxx/pqxx>

#include <cafmq/actors/runner.hpp>
#include <cafmq/client.hpp>
#include <cafmq/current_task.hpp>
#include <cafmq/error.hpp>
#include <cafmq/registry.hpp>
#include <cafmq/version.hpp>

namespace {

std::promise<std::string> greeting;

// A task handler: decode the payload, do the work, complete the task.
caf::error greet(cafmq::current_task& task) {
  auto who = task.json<std::string>();
  if (!who)
    return who.error(); // a payload it cannot decode fails the task
  if (auto err = task.complete())
    return err;
  greeting.set_value("Hello, " + *who + "!");
  return caf::none;
}

int fail(const caf::error& err) {
  std::cerr << "consumer: " << cafmq::render(err) << '\n';
  return 1;
}

} // namespace

int main() {
  const char* url = std::getenv("CAFMQ_DATABASE_URL");
  if (url == nullptr) {
    std::cerr << "consumer: set CAFMQ_DATABASE_URL\n";
    return 2;
  }
  auto tasks = cafmq::registry::make({{"greet", greet, {}}});
  if (!tasks)
    return fail(tasks.error());
  cafmq::actors::runner_config cfg;
  cfg.database_url = url;
  cfg.tasks = std::make_shared<cafmq::registry>(std::move(*tasks));
  auto runner = cafmq::actors::runner::start(cfg); // migrates the schema
  if (!runner)
    return fail(runner.error());
  auto spawned = cafmq::guarded([&]() -> caf::expected<cafmq::spawn_result> {
    pqxx::connection conn{url};
    return cfg.tasks->find("greet")
      ->builder()
      .json(std::string{"consumer"})
      .spawn(conn);
  });
  if (!spawned)
    return fail(spawned.error());
  auto result = greeting.get_future();
  if (result.wait_for(std::chrono::seconds{30}) != std::future_status::ready) {
    std::cerr << "consumer: the task did not run within 30 s\n";
    return 1;
  }
  (*runner)->stop();
  std::cout << result.get() << " (cafmq " << cafmq::version() << ", task "
            << cafmq::to_string(spawned->id) << ")\n";
  return 0;
}
