// SPDX-License-Identifier: BSD-3-Clause
// A CAF application that embeds the runtime in its own actor system and
// runs a task whose handler is an actor. The handler crashes (throws) in its
// first attempt; the runtime, which monitors it, records the failure and
// carries on, and the retry succeeds: fine-grained supervision.

#include <caf/all.hpp>

#include "cafmq/actors/config.hpp"
#include "cafmq/actors/runner.hpp"
#include "example_support.hpp"

namespace {

using cafmq::actors::handler_actor;

handler_actor::behavior_type flaky_handler(handler_actor::pointer self) {
  return {
    [=](cafmq::actors::run_atom, const cafmq::claimed_task& task) {
      if (task.attempt == 1) {
        aout(self) << "attempt 1: crashing" << std::endl;
        throw std::runtime_error("flaky handler crashed");
      }
      aout(self) << "attempt " << task.attempt << ": done" << std::endl;
      return true;
    },
    [](cafmq::actors::cancel_atom, cafmq::cancel_reason) {
      // Nothing to interrupt: each attempt answers at once.
    },
  };
}

// Returns the exit code: 0 when the task completed, 1 otherwise (the
// runner did not start, or the task did not end as expected).
int run(caf::actor_system& sys, const cafmq::actors::config& options) {
  cafmq::actors::actor_task_definition flaky;
  flaky.name = "flaky";
  flaky.behavior = flaky_handler;
  flaky.defaults.backoff = std::chrono::milliseconds{100};
  auto checked = options.runner(nullptr);
  if (!checked)
    return example::fail(checked.error());
  auto cfg = std::move(*checked);
  cfg.actor_tasks = {flaky};
  auto runner = cafmq::actors::spawn_runner(sys, cfg);
  if (!runner)
    return example::fail(runner.error());
  auto completed = false;
  pqxx::connection conn{cfg.database_url};
  auto spawned = flaky.builder().spawn(conn);
  if (!spawned) {
    example::fail(spawned.error());
  } else if (example::wait_until_finished(conn, {spawned->id})) {
    auto st = cafmq::status(conn, spawned->id);
    std::cout << "task " << cafmq::to_string(st->state) << " after "
              << st->attempt << " attempts; first failure recorded as: "
              << st->last_error.value_or("-") << std::endl;
    completed = st->state == cafmq::task_state::completed;
  }
  caf::scoped_actor self{sys};
  // Bounded like every request: the stop returns within the shutdown
  // timeout plus the handler grace period.
  self
    ->request(*runner, std::chrono::minutes{2}, cafmq::actors::stop_atom::value)
    .receive([](bool) {}, [](caf::error&) {});
  return completed ? 0 : 1;
}

} // namespace

// Not CAF_MAIN: its main() returns 0 whatever caf_main did.
int main(int argc, char** argv) {
  cafmq::actors::config cfg;
  if (auto err = cfg.parse(argc, argv)) {
    std::cerr << "error while parsing CLI and file options: "
              << caf::to_string(err) << '\n';
    return 1;
  }
  if (cfg.cli_helptext_printed)
    return 0;
  caf::actor_system sys{cfg};
  return run(sys, cfg);
}
