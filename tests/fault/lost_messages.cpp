// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE lost_messages
#include <caf/test/unit_test.hpp>

#include <thread>

#include "cafmq/actors/runner.hpp"
#include "cafmq/current_task.hpp"
#include "cafmq/error.hpp"
#include "support/db_fixture.hpp"
#include "support/process.hpp"
#include "support/queue_helpers.hpp"
#include "support/runner_fixture.hpp"

// Faults that take messages away: the LISTEN backend killed while a cancel
// is sent, and a task that kills every runner that runs it.

using namespace cafmq;
using namespace cafmq::test;
using namespace std::chrono_literals;

using lost_messages_fixture = runner_fixture;

CAF_TEST_FIXTURE_SCOPE(lost_messages_tests, lost_messages_fixture)

CAF_TEST(a cancel reaches the handler at lease renewal without its notify) {
  auto tasks = std::make_shared<registry>();
  tasks->add({"wait",
              [&](current_task& task) {
                while (!task.cancelled())
                  std::this_thread::sleep_for(1ms);
                return make_error(errc::handler_failed, "stopped");
              },
              {}});
  auto cfg = config(tasks);
  cfg.lease = 3s;
  cfg.keep_alive_interval = 300ms;
  cfg.request_timeout = 2s;
  auto r = start(cfg);
  auto id = spawn_builder{"wait"}.spawn(*conn)->id;
  wait_for([&] { return count("running") == 1; });
  // The cancel as cafmq.cancel stores it for a running task, without the
  // notification that would carry it at once: as if the LISTEN connection
  // had been lost when it was sent. (Killing that connection instead races
  // its rebuild, which is quick enough to catch the notification.)
  CAF_CHECK_EQUAL(query_value<int>("WITH c AS (UPDATE cafmq.tasks_live SET "
                                   "cancel_requested = true WHERE id = '"
                                   + to_string(id)
                                   + "' AND state = 'running' RETURNING 1) "
                                     "SELECT count(*) FROM c"),
                  1);
  wait_for([&] { return count("cancelled") == 1; });
  CAF_CHECK_GREATER_OR_EQUAL(r->stats().cancels_at_renewal, 1);
  // It ended cancelled, once; none is stuck.
  CAF_CHECK_EQUAL(count("cancelled"), 1);
  CAF_CHECK_EQUAL(count("pending") + count("running"), 0);
}

CAF_TEST(a task that keeps killing its runner ends failed as poison) {
  auto spawned = spawn_builder{"die"}.retries(20).spawn(*conn);
  CAF_REQUIRE(spawned);
  // Each runner process claims the task (once the last one's lease
  // expired) and dies in its handler. The default limit is 5 losses in a
  // row: the sixth claim ends the task instead of running it, and that
  // runner finds nothing left to do.
  int deaths = 0;
  for (int i = 0; i < 10 && state_of(*conn, spawned->id) != "failed"; ++i) {
    std::string output;
    auto rc = finish_process(start_process(std::string{CAFMQ_E2E_RUNNER} + " '"
                                           + url + "' poison"
                                           + std::to_string(i) + " 1 2 1000"),
                             output);
    if (rc != 0)
      ++deaths;
  }
  CAF_CHECK_EQUAL(deaths, 5);
  CAF_CHECK_EQUAL(state_of(*conn, spawned->id), "failed");
  auto reason
    = query_value<std::string>("SELECT last_error FROM cafmq.tasks WHERE id = '"
                               + to_string(spawned->id) + "'");
  CAF_MESSAGE("last error: " << reason);
  CAF_CHECK(reason.find("lost 5 attempts in a row") != std::string::npos);
  // None is stuck.
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.tasks WHERE "
                                   "state IN ('pending', 'running')"),
                  0);
}

CAF_TEST_FIXTURE_SCOPE_END()
