// A CAF application that embeds the runtime in its own actor system and
// runs a task whose handler is an actor. The handler crashes (throws) in its
// first attempt; the runtime, which monitors it, records the failure and
// carries on, and the retry succeeds: fine-grained supervision.

#include <caf/all.hpp>

#include "cafmq/actors/config.hpp"
#include "cafmq/actors/messages.hpp"
#include "cafmq/actors/runner.hpp"
#include "example_support.hpp"

namespace {

caf::behavior flaky_handler(caf::event_based_actor* self) {
  return {[=](cafmq::actors::run_atom, const cafmq::claimed_task& task) {
    if (task.attempt == 1) {
      aout(self) << "attempt 1: crashing" << std::endl;
      throw std::runtime_error("flaky handler crashed");
    }
    aout(self) << "attempt " << task.attempt << ": done" << std::endl;
    return true;
  }};
}

void caf_main(caf::actor_system& sys, const cafmq::actors::config& options) {
  cafmq::actors::actor_task_definition flaky;
  flaky.name = "flaky";
  flaky.spawn = [](caf::actor_system& sys) {
    return sys.spawn(flaky_handler);
  };
  flaky.defaults.backoff = std::chrono::milliseconds{100};
  auto cfg = options.runner(nullptr);
  cfg.actor_tasks = {flaky};
  auto runner = cafmq::actors::spawn_runner(sys, cfg);
  if (!runner) {
    example::fail(runner.error());
    return;
  }
  pqxx::connection conn{cfg.database_url};
  auto spawned = flaky.builder().spawn(conn);
  if (spawned && example::wait_until_finished(conn, {spawned->id})) {
    auto st = cafmq::status(conn, spawned->id);
    std::cout << "task " << cafmq::to_string(st->state) << " after "
              << st->attempt << " attempts; first failure recorded as: "
              << st->last_error.value_or("-") << std::endl;
  }
  caf::scoped_actor self{sys};
  self->request(*runner, caf::infinite, cafmq::actors::stop_atom::value)
    .receive([](bool) {}, [](caf::error&) {});
}

} // namespace

CAF_MAIN()
