// SPDX-License-Identifier: BSD-3-Clause
// A long task that checkpoints its progress: it processes ten chunks, saving
// the next chunk after each. Its first attempt crashes halfway; the retry
// resumes from the checkpoint instead of starting over.

#include "cafmq/current_task.hpp"
#include "cafmq/spawn.hpp"
#include "example_support.hpp"

namespace {

caf::error long_task(cafmq::current_task& task) {
  auto progress = task.json<nlohmann::json>();
  if (!progress)
    return progress.error();
  int next = progress->value("next", 0);
  std::cout << "attempt " << task.attempt() << " starts at chunk " << next
            << std::endl;
  for (; next < 10; ++next) {
    if (task.attempt() == 1 && next == 5)
      return cafmq::make_error(cafmq::errc::handler_failed,
                               "simulated crash at chunk 5");
    std::cout << "  chunk " << next << " done" << std::endl;
    auto err = task.checkpoint(
      cafmq::checkpoint{}.json(nlohmann::json{{"next", next + 1}}));
    if (err)
      return err;
  }
  return caf::none;
}

} // namespace

int main() {
  auto url = example::database_url();
  cafmq::task_options defaults;
  defaults.backoff = std::chrono::milliseconds{100};
  auto tasks = std::make_shared<cafmq::registry>();
  if (auto err = tasks->add({"long_task", long_task, defaults}))
    return example::fail(err);
  auto runner = example::start_runner(url, tasks);
  pqxx::connection conn{url};
  auto spawned = tasks->find("long_task")
                   ->builder()
                   .json(nlohmann::json{{"next", 0}})
                   .spawn(conn);
  if (!spawned)
    return example::fail(spawned.error());
  if (!example::wait_until_finished(conn, {spawned->id}))
    return 1;
  auto st = cafmq::status(conn, spawned->id);
  std::cout << "task " << cafmq::to_string(st->state) << " after "
            << st->attempt << " attempts" << std::endl;
  return st->state == cafmq::task_state::completed ? 0 : 1;
}
