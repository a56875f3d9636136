// SPDX-License-Identifier: BSD-3-Clause
// The seed README's example, end to end: a task defined for channel "foo"
// greets whoever its JSON payload names; it is spawned with a channel
// override ("bar") and run by a runner. Options come from cafmq.ini (found
// next to the program in the build tree, or in share/cafmq when installed;
// see cafmq::actors::config::default_config_file) and the command line
// (--cafmq.database-url=URL, ...); the database defaults to
// CAFMQ_DATABASE_URL.

#include <cstdlib>
#include <future>
#include <iostream>

#include <pqxx/pqxx>

#include "cafmq/actors/config.hpp"
#include "cafmq/actors/runner.hpp"
#include "cafmq/client.hpp"
#include "cafmq/current_task.hpp"
#include "cafmq/error.hpp"
#include "cafmq/registry.hpp"

namespace {

std::promise<void> greeted;

// Decodes the JSON payload, does the work, marks the task complete.
caf::error example_task(cafmq::current_task& task) {
  auto who = task.json<nlohmann::json>();
  if (!who)
    return who.error();
  std::cout << "Hello, "
            << (who->is_string() ? who->get<std::string>() : "world") << "!"
            << std::endl;
  auto err = task.complete();
  greeted.set_value();
  return err;
}

int fail(const caf::error& err) {
  std::cerr << "quickstart: " << cafmq::render(err) << '\n';
  return 1;
}

} // namespace

int main(int argc, char** argv) {
  cafmq::actors::config options;
  if (auto err = options.parse(argc, argv)) {
    std::cerr << "quickstart: " << caf::to_string(err) << '\n';
    return 2;
  }
  if (options.cli_helptext_printed)
    return 0;
  // Task definitions with their defaults, like sqlxmq's #[job] attribute.
  cafmq::task_options defaults;
  defaults.channel_name = "foo";
  auto tasks
    = cafmq::registry::make({{"example_task", example_task, defaults}});
  if (!tasks)
    return fail(tasks.error());
  // A runner on the database, with the options of cafmq.ini (--help lists
  // them with their defaults).
  auto checked
    = options.runner(std::make_shared<cafmq::registry>(std::move(*tasks)));
  if (!checked)
    return fail(checked.error());
  auto cfg = std::move(*checked);
  const auto& url = cfg.database_url;
  auto runner = cafmq::actors::runner::start(cfg);
  if (!runner)
    return fail(runner.error());
  // Spawn a task, overriding its channel.
  auto spawned = cafmq::guarded([&]() -> caf::expected<cafmq::spawn_result> {
    pqxx::connection conn{url};
    return cfg.tasks->find("example_task")
      ->builder()
      .channel_name("bar")
      .json(std::string{"John"})
      .spawn(conn);
  });
  if (!spawned)
    return fail(spawned.error());
  if (greeted.get_future().wait_for(std::chrono::seconds{30})
      != std::future_status::ready) {
    std::cerr << "quickstart: the task did not run within 30 s\n";
    return 1;
  }
  (*runner)->stop();
  auto st = cafmq::guarded([&]() -> caf::expected<cafmq::task_status> {
    pqxx::connection conn{url};
    return cafmq::status(conn, spawned->id);
  });
  if (!st)
    return fail(st.error());
  std::cout << "task " << cafmq::to_string(spawned->id) << " in channel "
            << st->channel_name << ": " << cafmq::to_string(st->state)
            << " after " << st->attempt << " attempt(s)" << std::endl;
  return st->state == cafmq::task_state::completed ? 0 : 1;
}
