#define CAF_SUITE cancellation
#include <caf/test/dsl.hpp>

#include "support/runtime_fixture.hpp"

using namespace caf;
using namespace cafmq;
using namespace cafmq::actors;
using namespace cafmq::test;
using namespace std::chrono_literals;

namespace {

// A handler actor that works until it is asked to stop, then reports that.
behavior cooperative_handler(event_based_actor* self) {
  auto pending = std::make_shared<response_promise>();
  return {
    [=](run_atom, const claimed_task&) -> result<bool> {
      *pending = self->make_response_promise();
      return delegated<bool>{};
    },
    [=](cancel_atom, cancel_reason why) {
      pending->deliver(
        make_error(errc::handler_failed, "stopped: " + to_string(why)));
    },
  };
}

struct cancel_fixture : fixture {
  cancel_fixture() {
    cfg.actor_tasks = {{"coop",
                        [started = started](actor_system& sys) {
                          ++*started;
                          return sys.spawn(cooperative_handler);
                        },
                        {},
                        nullptr}};
    cfg.max_poll_wait = 1h;
    cfg.keep_alive_interval = 10s;
    cfg.maintenance_interval = 1h;
  }

  // Starts a dispatcher running one cooperative attempt.
  std::pair<actor, claimed_task> start_one(claimed_task task) {
    claim_result batch;
    batch.tasks = {task};
    log->claims.push_back(batch);
    auto d = start();
    sched.run();
    CAF_REQUIRE(log->records.empty());
    return {d, task};
  }

  std::vector<attempt_failure> failures() {
    std::vector<attempt_failure> result;
    for (auto& b : log->records)
      result.insert(result.end(), b.failed.begin(), b.failed.end());
    return result;
  }

  // Starts a dispatcher that claims `n` cooperative attempts in one batch.
  std::pair<actor, std::vector<claimed_task>> start_batch(int n) {
    claim_result batch;
    for (int i = 0; i < n; ++i)
      batch.tasks.push_back(make_task("coop"));
    log->claims.push_back(batch);
    auto d = start();
    sched.run();
    return {d, batch.tasks};
  }

  std::set<uuid> released_ids() {
    std::set<uuid> result;
    for (auto& b : log->records)
      for (auto& x : b.released)
        result.insert(x.id);
    return result;
  }

  // Handler actors spawned so far (attempts started).
  std::shared_ptr<int> started = std::make_shared<int>(0);

  runner_stats stats(const actor& d) {
    self->send(d, stats_atom::value);
    sched.run();
    runner_stats result;
    self->receive([&](const runner_stats& x) { result = x; });
    return result;
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(cancellation_tests, cancel_fixture)

CAF_TEST(a cancel notification stops a running attempt for good) {
  auto [d, task] = start_one(make_task("coop"));
  anon_send(d, cancel_atom::value, to_string(task.id));
  sched.run();
  auto failed = failures();
  CAF_REQUIRE_EQUAL(failed.size(), 1u);
  CAF_CHECK(failed[0].ref.id == task.id);
  CAF_CHECK(!failed[0].retryable);
  CAF_CHECK(failed[0].error.find("stopped: cancelled") != std::string::npos);
  // A cancel for a task this runner does not run changes nothing.
  anon_send(d, cancel_atom::value, to_string(uuid::random()));
  sched.run();
  CAF_CHECK_EQUAL(failures().size(), 1u);
  anon_send_exit(d, exit_reason::user_shutdown);
  sched.run();
}

CAF_TEST(a cancel that overtakes its attempt on the way is not lost) {
  claim_result batch;
  auto task = make_task("coop");
  batch.tasks = {task};
  log->claims.push_back(batch);
  auto d = start();
  expect((claim_atom, claim_request), to(db));
  expect((claim_result), from(db).to(d));
  // The attempt sits in its channel's mailbox when the cancel arrives; the
  // pool hears of the cancel before the attempt.
  anon_send(d, cancel_atom::value, to_string(task.id));
  expect((cancel_atom, std::string), to(d));
  sched.run();
  auto failed = failures();
  CAF_REQUIRE_EQUAL(failed.size(), 1u);
  CAF_CHECK(!failed[0].retryable);
  anon_send_exit(d, exit_reason::user_shutdown);
  sched.run();
}

CAF_TEST(a lease renewal delivers a cancel whose notification was missed) {
  auto [d, task] = start_one(make_task("coop"));
  log->cancel_requested.insert(task.id);
  sched.advance_time(10s);
  sched.run();
  auto failed = failures();
  CAF_REQUIRE_EQUAL(failed.size(), 1u);
  CAF_CHECK(!failed[0].retryable);
  CAF_CHECK_EQUAL(stats(d).cancels_at_renewal, 1);
  anon_send_exit(d, exit_reason::user_shutdown);
  sched.run();
}

CAF_TEST(a timeout fires the token and counts as a retryable failure) {
  auto task = make_task("coop");
  task.timeout = 5s;
  auto [d, t] = start_one(task);
  sched.advance_time(4s);
  sched.run();
  CAF_CHECK(failures().empty());
  sched.advance_time(1s);
  sched.run();
  auto failed = failures();
  CAF_REQUIRE_EQUAL(failed.size(), 1u);
  CAF_CHECK(failed[0].retryable);
  CAF_CHECK(failed[0].error.find("timeout") != std::string::npos);
  anon_send_exit(d, exit_reason::user_shutdown);
  sched.run();
}

CAF_TEST(a deadline closer than the timeout fires first) {
  auto task = make_task("coop");
  task.timeout = 50s;
  task.deadline_in = 3s;
  auto [d, t] = start_one(task);
  sched.advance_time(3s);
  sched.run();
  auto failed = failures();
  CAF_REQUIRE_EQUAL(failed.size(), 1u);
  CAF_CHECK(failed[0].error.find("deadline") != std::string::npos);
  anon_send_exit(d, exit_reason::user_shutdown);
  sched.run();
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
  auto d = start();
  sched.run();
  auto failed = failures();
  CAF_REQUIRE_EQUAL(failed.size(), 2u);
  for (auto& f : failed)
    CAF_CHECK_EQUAL(f.retryable, f.ref.id == lenient.id);
  anon_send_exit(d, exit_reason::user_shutdown);
  sched.run();
}

CAF_TEST(maintenance prunes every interval and at once after a full batch) {
  cfg.maintenance_interval = 60s;
  cfg.keep_alive_interval = 1h;
  auto d = start();
  sched.run();
  CAF_CHECK_EQUAL(log->prunes, 0);
  sched.advance_time(60s);
  sched.run();
  CAF_CHECK_EQUAL(log->expires, 1);
  CAF_CHECK_EQUAL(log->prunes, 1);
  // A full batch: the next round follows without waiting.
  log->prune_answer = cfg.prune_batch;
  sched.advance_time(60s);
  sched.run_once();
  for (int i = 0; i < 20; ++i)
    sched.run_once();
  CAF_CHECK_GREATER(log->prunes, 2);
  log->prune_answer = 0;
  anon_send_exit(d, exit_reason::user_shutdown);
  sched.run();
}

CAF_TEST(attempts claimed ahead wait for a slot and a stop gives them back) {
  cfg.min_concurrency = 1;
  cfg.max_concurrency = 2;
  cfg.prefetch = 2;
  auto [d, tasks] = start_batch(4);
  // One claim for the slots and the buffer; two handlers run, two wait.
  CAF_REQUIRE_EQUAL(log->claim_limits.size(), 1u);
  CAF_CHECK_EQUAL(log->claim_limits[0], 4);
  CAF_CHECK_EQUAL(*started, 2);
  self->send(d, stop_atom::value);
  sched.run();
  // The waiting two go back to the queue at once, unstarted.
  CAF_CHECK(released_ids() == (std::set<uuid>{tasks[2].id, tasks[3].id}));
  CAF_CHECK_EQUAL(*started, 2);
  CAF_CHECK_EQUAL(stats(d).released, 2);
  CAF_CHECK(failures().empty());
  // The running two get the shutdown timeout; then they are abandoned to
  // lease expiry, and their handler actors end with the runner.
  sched.advance_time(cfg.shutdown_timeout);
  sched.run();
  CAF_CHECK(failures().empty());
  CAF_CHECK_EQUAL(released_ids().size(), 2u);
}

CAF_TEST(a cancelled attempt that waits for a slot never starts) {
  cfg.min_concurrency = 1;
  cfg.max_concurrency = 1;
  cfg.prefetch = 1;
  auto [d, tasks] = start_batch(2);
  CAF_CHECK_EQUAL(*started, 1);
  anon_send(d, cancel_atom::value, to_string(tasks[1].id));
  sched.run();
  auto failed = failures();
  CAF_REQUIRE_EQUAL(failed.size(), 1u);
  CAF_CHECK(failed[0].ref.id == tasks[1].id);
  CAF_CHECK(!failed[0].retryable);
  CAF_CHECK_EQUAL(*started, 1);
  anon_send_exit(d, exit_reason::user_shutdown);
  sched.run();
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
  auto d = start();
  sched.run();
  // The second waits 3 s for the first, then has 2 s left, not 5.
  sched.advance_time(3s);
  anon_send(d, cancel_atom::value, to_string(first.id));
  sched.run();
  CAF_CHECK_EQUAL(*started, 2);
  CAF_CHECK_EQUAL(failures().size(), 1u);
  sched.advance_time(2s);
  sched.run();
  auto failed = failures();
  CAF_REQUIRE_EQUAL(failed.size(), 2u);
  CAF_CHECK(failed[1].ref.id == second.id);
  CAF_CHECK(failed[1].error.find("deadline") != std::string::npos);
  anon_send_exit(d, exit_reason::user_shutdown);
  sched.run();
}

CAF_TEST_FIXTURE_SCOPE_END()
