// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE cancellation
#include <caf/test/dsl.hpp>

#include "support/stand_ins.hpp"

using namespace caf;
using namespace cafmq;
using namespace cafmq::actors;
using namespace cafmq::test;
using namespace std::chrono_literals;

namespace {

struct cancel_fixture : fixture {
  cancel_fixture() {
    auto started = this->started;
    cfg.actor_tasks = {{"coop",
                        [started](handler_actor::pointer self) {
                          ++*started;
                          return cooperative_handler(self);
                        },
                        {},
                        nullptr},
                       {"stubborn", stubborn_handler, {}, nullptr}};
    cfg.max_poll_wait = 1h;
    cfg.keep_alive_interval = 10s;
  }

  // Starts a runtime running one attempt.
  claimed_task start_one(claimed_task task) {
    claim_result batch;
    batch.tasks = {task};
    log->claims.push_back(batch);
    start();
    settle();
    CAF_REQUIRE(log->records.empty());
    return task;
  }

  // Starts a runtime that claims `n` cooperative attempts in one batch.
  std::vector<claimed_task> start_batch(int n) {
    claim_result batch;
    for (int i = 0; i < n; ++i)
      batch.tasks.push_back(make_task("coop"));
    log->claims.push_back(batch);
    start();
    settle();
    return batch.tasks;
  }

  // Handler actors spawned so far (attempts started).
  std::shared_ptr<int> started = std::make_shared<int>(0);
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(cancellation_tests, cancel_fixture)

CAF_TEST(a cancel notification stops a running attempt for good) {
  auto task = start_one(make_task("coop"));
  notify_cancel(task);
  settle();
  auto failed = failures();
  CAF_REQUIRE_EQUAL(failed.size(), 1u);
  CAF_CHECK(failed[0].ref.id == task.id);
  CAF_CHECK(!failed[0].retryable);
  CAF_CHECK(failed[0].error.find("stopped: cancelled") != std::string::npos);
  // A cancel for a task this runner does not run changes nothing.
  notify_cancel(make_task("coop"));
  settle();
  CAF_CHECK_EQUAL(failures().size(), 1u);
}

CAF_TEST(a cancel that overtakes its attempt on the way is not lost) {
  claim_result batch;
  auto task = make_task("coop");
  batch.tasks = {task};
  log->claims.push_back(batch);
  start();
  // Restart the claim with the answer held back: the cancel arrives while
  // the claim is in flight.
  log->claims.push_back(batch);
  anon_send(dispatcher(), rescan_atom::value);
  sched.run_once(); // the dispatcher sends the claim
  notify_cancel(task);
  settle();
  auto failed = failures();
  CAF_REQUIRE_EQUAL(failed.size(), 1u);
  CAF_CHECK(!failed[0].retryable);
}

CAF_TEST(a lease renewal delivers a cancel whose notification was missed) {
  auto task = start_one(make_task("coop"));
  log->cancel_requested.insert(task.id);
  advance(10s);
  auto failed = failures();
  CAF_REQUIRE_EQUAL(failed.size(), 1u);
  CAF_CHECK(!failed[0].retryable);
  CAF_CHECK_EQUAL(stats().cancels_at_renewal, 1);
}

CAF_TEST(a timeout fires the token and counts as a retryable failure) {
  auto task = make_task("coop");
  task.timeout = 5s;
  start_one(task);
  advance(4s);
  CAF_CHECK(failures().empty());
  advance(1s);
  auto failed = failures();
  CAF_REQUIRE_EQUAL(failed.size(), 1u);
  CAF_CHECK(failed[0].retryable);
  CAF_CHECK(failed[0].error.find("timeout") != std::string::npos);
}

CAF_TEST(a deadline closer than the timeout fires first) {
  auto task = make_task("coop");
  task.timeout = 50s;
  task.deadline_in = 3s;
  start_one(task);
  advance(3s);
  auto failed = failures();
  CAF_REQUIRE_EQUAL(failed.size(), 1u);
  CAF_CHECK(failed[0].error.find("deadline") != std::string::npos);
}

CAF_TEST(a handler actor that ignores its cancel is killed after the grace) {
  cfg.handler_grace = 5s;
  auto task = make_task("stubborn");
  task.timeout = 10s;
  start_one(task);
  advance(10s);
  CAF_CHECK(failures().empty());
  advance(5s);
  auto failed = failures();
  CAF_REQUIRE_EQUAL(failed.size(), 1u);
  CAF_CHECK(failed[0].retryable);
  CAF_CHECK(failed[0].error.find("timeout") != std::string::npos);
  // The runtime goes on.
  auto calls = log->claim_calls;
  anon_send(dispatcher(), rescan_atom::value);
  settle();
  CAF_CHECK_GREATER(log->claim_calls, calls);
}

CAF_TEST(the failure filter decides retries per runner and per task) {
  // The runner treats every error as definitive...
  cfg.is_failure = [](const caf::error&) {
    return true;
  };
  auto tasks = std::make_shared<registry>(*cfg.tasks);
  // ...but this task treats only invalid arguments as definitive.
  tasks->add({"lenient",
              [](current_task&) -> caf::error {
                return make_error(errc::handler_failed, "flaky");
              },
              {},
              [](const caf::error& err) {
                return code_of(err) == errc::invalid_argument;
              }});
  cfg.tasks = tasks;
  claim_result batch;
  auto strict = make_task("boom");
  auto lenient = make_task("lenient");
  batch.tasks = {strict, lenient};
  log->claims.push_back(batch);
  start();
  settle();
  auto failed = failures();
  CAF_REQUIRE_EQUAL(failed.size(), 2u);
  for (auto& f : failed)
    CAF_CHECK_EQUAL(f.retryable, f.ref.id == lenient.id);
}

CAF_TEST(maintenance prunes every interval and at once after a full batch) {
  cfg.maintenance_interval = 60s;
  cfg.schedule_interval = 0s;
  cfg.keep_alive_interval = 1h;
  start();
  CAF_CHECK_EQUAL(log->prunes, 0);
  advance(60s);
  CAF_CHECK_EQUAL(log->expires, 1);
  CAF_CHECK_EQUAL(log->prunes, 1);
  // A full batch: the next round follows without waiting.
  log->prune_answer = cfg.prune_batch;
  sched.advance_time(60s);
  for (int i = 0; i < 20; ++i)
    sched.run_once();
  CAF_CHECK_GREATER(log->prunes, 2);
  log->prune_answer = 0;
  settle();
}

CAF_TEST(attempts claimed ahead wait for a slot and a stop gives them back) {
  cfg.min_concurrency = 1;
  cfg.max_concurrency = 2;
  cfg.prefetch = 2;
  auto tasks = start_batch(4);
  // One claim for the slots and the buffer; two handlers run, two wait.
  CAF_REQUIRE_EQUAL(log->claim_limits.size(), 1u);
  CAF_CHECK_EQUAL(log->claim_limits[0], 4);
  CAF_CHECK_EQUAL(*started, 2);
  request_stop();
  settle();
  // The waiting two go back to the queue at once, unstarted.
  CAF_CHECK(released_ids() == (std::set<uuid>{tasks[2].id, tasks[3].id}));
  CAF_CHECK_EQUAL(*started, 2);
  CAF_CHECK(failures().empty());
  CAF_CHECK(!stop_answered());
  // The running two run until the handler grace and the stop's reserve
  // (1 s of 30 s) are left; then their cancel fires (reason shutdown), they
  // stop at once and are given back too: an outcome after the cancel is
  // still written.
  advance(cancel_point() - 1ms);
  CAF_CHECK_EQUAL(released_ids().size(), 2u);
  advance(1ms);
  CAF_CHECK(failures().empty());
  CAF_CHECK_EQUAL(released_ids().size(), 4u);
  CAF_CHECK(stop_answered());
}

CAF_TEST(a stop ends within its timeout though a handler ignores its cancel) {
  // The grace is part of the shutdown timeout: the cancel comes when the
  // grace and the reserve are left, the kill when the reserve is left.
  cfg.handler_grace = 5s;
  auto task = make_task("stubborn");
  start_one(task);
  request_stop();
  settle();
  advance(cancel_point());
  CAF_CHECK(!stop_answered());
  advance(cfg.handler_grace);
  CAF_CHECK(stop_answered());
  CAF_CHECK_LESS(cancel_point() + cfg.handler_grace, cfg.shutdown_timeout);
}

CAF_TEST(a cancelled attempt that waits for a slot never starts) {
  cfg.min_concurrency = 1;
  cfg.max_concurrency = 1;
  cfg.prefetch = 1;
  auto tasks = start_batch(2);
  CAF_CHECK_EQUAL(*started, 1);
  notify_cancel(tasks[1]);
  settle();
  auto failed = failures();
  CAF_REQUIRE_EQUAL(failed.size(), 1u);
  CAF_CHECK(failed[0].ref.id == tasks[1].id);
  CAF_CHECK(!failed[0].retryable);
  CAF_CHECK_EQUAL(*started, 1);
}

CAF_TEST(a deadline counts from the claim while the attempt waits) {
  cfg.min_concurrency = 1;
  cfg.max_concurrency = 1;
  cfg.prefetch = 1;
  claim_result batch;
  auto first = make_task("coop");
  auto second = make_task("coop");
  second.deadline_in = 5s;
  batch.tasks = {first, second};
  log->claims.push_back(batch);
  start();
  settle();
  // The second waits 3 s for the first, then has 2 s left, not 5.
  sched.advance_time(3s);
  notify_cancel(first);
  settle();
  CAF_CHECK_EQUAL(*started, 2);
  CAF_CHECK_EQUAL(failures().size(), 1u);
  advance(2s);
  auto failed = failures();
  CAF_REQUIRE_EQUAL(failed.size(), 2u);
  CAF_CHECK(failed[1].ref.id == second.id);
  CAF_CHECK(failed[1].error.find("deadline") != std::string::npos);
}

CAF_TEST_FIXTURE_SCOPE_END()
