#define CAF_SUITE dispatcher
#include <caf/test/dsl.hpp>

#include <algorithm>

#include "support/runtime_fixture.hpp"

using namespace caf;
using namespace cafmq;
using namespace cafmq::actors;
using namespace cafmq::test;
using namespace std::chrono_literals;

CAF_TEST_FIXTURE_SCOPE(dispatcher_tests, fixture)

CAF_TEST(claimed tasks run and their outcomes are written) {
  claim_result batch;
  auto ok1 = make_task("ok");
  auto ok2 = make_task("ok");
  auto failing = make_task("boom");
  auto mismatch = make_task("typed", "\"not a number\"");
  batch.tasks = {ok1, ok2, failing, mismatch};
  log->claims.push_back(batch);
  cfg.min_concurrency = 4;
  auto d = start();
  sched.run();
  CAF_CHECK_EQUAL(completed_count(*log), 2u);
  std::vector<attempt_failure> failed;
  for (auto& b : log->records)
    failed.insert(failed.end(), b.failed.begin(), b.failed.end());
  CAF_REQUIRE_EQUAL(failed.size(), 2u);
  for (auto& f : failed) {
    if (f.ref.id == failing.id) {
      CAF_CHECK(f.retryable);
      CAF_CHECK(f.error.find("boom") != std::string::npos);
    } else {
      CAF_CHECK(f.ref.id == mismatch.id);
      CAF_CHECK(!f.retryable);
      CAF_CHECK(f.error.find("payload_mismatch") != std::string::npos);
    }
  }
  // Group commit: the first outcome goes out alone, the rest in one batch.
  CAF_CHECK_LESS_OR_EQUAL(log->records.size(), 2u);
  anon_send_exit(d, exit_reason::user_shutdown);
  sched.run();
}

CAF_TEST(the dispatcher wakes at the nearest scheduled time) {
  log->idle_wait = 2s;
  auto d = start();
  sched.run();
  CAF_CHECK_EQUAL(log->claim_calls, 1);
  sched.advance_time(1s);
  sched.run();
  CAF_CHECK_EQUAL(log->claim_calls, 1);
  sched.advance_time(1s);
  sched.run();
  CAF_CHECK_EQUAL(log->claim_calls, 2);
  // Nothing scheduled: the wait is capped by max_poll_wait.
  log->idle_wait = 1h;
  sched.advance_time(2s);
  sched.run();
  CAF_CHECK_EQUAL(log->claim_calls, 3);
  sched.advance_time(5s);
  sched.run();
  CAF_CHECK_EQUAL(log->claim_calls, 4);
  anon_send_exit(d, exit_reason::user_shutdown);
  sched.run();
}

CAF_TEST(an empty claim never makes the dispatcher spin) {
  // The database reports work somewhere (wait 0) but none for us.
  log->idle_wait = 0s;
  auto d = start();
  sched.run();
  CAF_CHECK_EQUAL(log->claim_calls, 1);
  anon_send_exit(d, exit_reason::user_shutdown);
  sched.run();
}

CAF_TEST(a notification makes the dispatcher claim at once) {
  auto d = start();
  sched.run();
  CAF_CHECK_EQUAL(log->claim_calls, 1);
  anon_send(d, ready_atom::value, std::string{"foo"});
  sched.run();
  CAF_CHECK_EQUAL(log->claim_calls, 2);
  anon_send(d, rescan_atom::value);
  sched.run();
  CAF_CHECK_EQUAL(log->claim_calls, 3);
  anon_send_exit(d, exit_reason::user_shutdown);
  sched.run();
}

CAF_TEST(the claim ahead follows the measured throughput) {
  cfg.min_concurrency = 1;
  cfg.max_concurrency = 2;
  cfg.prefetch = 1000;
  cfg.prefetch_window = 1s;
  for (int i = 0; i < 50; ++i) {
    claim_result batch;
    batch.tasks = {make_task("ok"), make_task("ok")};
    log->claims.push_back(batch);
  }
  auto d = start();
  sched.run();
  // Nothing measured yet: claims only fill the handler slots.
  CAF_REQUIRE_GREATER_OR_EQUAL(log->claim_limits.size(), 51u);
  CAF_CHECK_EQUAL(log->claim_limits.front(), 2);
  CAF_CHECK_EQUAL(completed_count(*log), 100u);
  // 100 attempts in one second: hold what half that rate (the smoothed
  // estimate) finishes in the 1 s window.
  sched.advance_time(1s);
  anon_send(d, ready_atom::value, std::string{});
  sched.run();
  CAF_CHECK_EQUAL(log->claim_limits.back(), 2 + 50);
  // A second without work halves the estimate again.
  sched.advance_time(1s);
  anon_send(d, ready_atom::value, std::string{});
  sched.run();
  CAF_CHECK_EQUAL(log->claim_limits.back(), 2 + 25);
  anon_send_exit(d, exit_reason::user_shutdown);
  sched.run();
}

CAF_TEST(a starved runner claims more each time up to the prefetch) {
  // No time passes, so no throughput is measured: only the ramp grows the
  // claims. Handlers finish before each claim returns (starved).
  cfg.min_concurrency = 2;
  cfg.max_concurrency = 4;
  cfg.prefetch = 2048;
  cfg.prefetch_window = 1s;
  log->backlog = 20000;
  auto d = start();
  // The database is the slow part: everything else runs before each of its
  // messages, so every claim comes back to a runner that ran out of work.
  auto is_db = [&](resumable* job) {
    auto ptr = dynamic_cast<abstract_actor*>(job);
    return ptr != nullptr && ptr->id() == db.id();
  };
  while (sched.has_job()) {
    auto& jobs = sched.jobs;
    auto other = std::find_if_not(jobs.begin(), jobs.end(), is_db);
    if (other != jobs.end() && other != jobs.begin())
      std::iter_swap(jobs.begin(), other);
    sched.run_once();
  }
  CAF_CHECK_EQUAL(log->backlog, 0);
  auto& limits = log->claim_limits;
  CAF_REQUIRE_GREATER_OR_EQUAL(limits.size(), 10u);
  CAF_CHECK_EQUAL(limits.front(), 4);
  // Each claim is sent while the previous batch is held, so a claim and the
  // one before it together are what the runner holds: they grow to
  // max_concurrency + prefetch within a few claims and never beyond.
  size_t full_at = 0;
  for (size_t i = 1; i < limits.size(); ++i) {
    auto held = limits[i - 1] + limits[i];
    CAF_CHECK_LESS_OR_EQUAL(held, 4 + 2048);
    if (full_at == 0 && held == 4 + 2048)
      full_at = i;
  }
  CAF_CHECK_GREATER(full_at, 0u);
  CAF_CHECK_LESS_OR_EQUAL(full_at, 8u);
  CAF_CHECK_EQUAL(completed_count(*log), 20000u);
  // An empty claim ends the ramp: the next claim fills the slots only.
  anon_send(d, ready_atom::value, std::string{});
  sched.run();
  CAF_CHECK_EQUAL(limits.back(), 4);
  anon_send_exit(d, exit_reason::user_shutdown);
  sched.run();
}

CAF_TEST(an outcome waiting to be written keeps its lease) {
  claim_result batch;
  auto task = make_task("ok");
  batch.tasks = {task};
  log->claims.push_back(batch);
  log->fail_records = true;
  auto d = start();
  sched.run();
  // The handler returned; writing its completion fails (and is retried).
  CAF_CHECK(log->records.empty());
  sched.advance_time(10s);
  sched.run();
  CAF_REQUIRE_EQUAL(log->renewals.size(), 1u);
  CAF_CHECK(log->renewals[0] == std::vector<attempt_ref>{{task.id, 1}});
  // Once written, the attempt leaves the renewals.
  log->fail_records = false;
  sched.advance_time(5s);
  sched.run();
  CAF_CHECK_EQUAL(completed_count(*log), 1u);
  sched.advance_time(10s);
  sched.run();
  CAF_CHECK_EQUAL(log->renewals.size(), 1u);
  anon_send_exit(d, exit_reason::user_shutdown);
  sched.run();
}

CAF_TEST(leases of running attempts are renewed once per interval) {
  claim_result batch;
  batch.tasks = {make_task("ok"), make_task("ok")};
  log->claims.push_back(batch);
  cfg.max_poll_wait = 20s;
  auto d = start();
  // Run only the dispatcher and the database: the workers keep their run
  // messages, so both attempts stay running.
  expect((claim_atom, claim_request), to(db));
  expect((claim_result), from(db).to(d));
  CAF_CHECK(log->renewals.empty());
  sched.advance_time(10s);
  expect((tick_atom), to(d));
  expect((renew_atom, std::vector<attempt_ref>, std::chrono::milliseconds),
         to(db));
  CAF_REQUIRE_EQUAL(log->renewals.size(), 1u);
  CAF_CHECK_EQUAL(log->renewals[0].size(), 2u);
  anon_send_exit(d, exit_reason::user_shutdown);
  sched.run();
}

CAF_TEST(a graceful stop lets running handlers finish and writes outcomes) {
  auto d = start_and_stop_with_one_running();
  CAF_CHECK_EQUAL(completed_count(*log), 0u);
  // Now the worker runs; the dispatcher flushes and replies.
  sched.run();
  CAF_CHECK_EQUAL(completed_count(*log), 1u);
  expect((bool), from(d).to(self).with(true));
  // No claims after the stop.
  CAF_CHECK_EQUAL(log->claim_calls, 1);
}

CAF_TEST(a stop abandons handlers that outlive the shutdown timeout) {
  auto d = start_and_stop_with_one_running();
  sched.advance_time(30s);
  expect((timeout_atom), to(d));
  // The completer answers the flush at once; the handler has not returned.
  run_all_but_workers();
  expect((bool), from(d).to(self).with(true));
  // The abandoned attempt was not recorded; its lease will run out.
  CAF_CHECK_EQUAL(completed_count(*log), 0u);
  sched.run();
}

CAF_TEST(handler actors are supervised per attempt) {
  auto def = [](std::string name, behavior (*fun)(event_based_actor*)) {
    return actor_task_definition{
      name, [fun](actor_system& sys) { return sys.spawn(fun); }, {}};
  };
  cfg.actor_tasks
    = {def("good", good_handler), def("throwing", throwing_handler),
       def("refusing", refusing_handler), def("quitting", quitting_handler)};
  claim_result batch;
  auto good = make_task("good");
  auto throwing = make_task("throwing");
  auto refusing = make_task("refusing");
  auto quitting = make_task("quitting");
  batch.tasks = {good, throwing, refusing, quitting};
  log->claims.push_back(batch);
  cfg.min_concurrency = 4;
  auto d = start();
  sched.run();
  CAF_CHECK_EQUAL(completed_count(*log), 1u);
  std::map<std::string, attempt_failure> failed;
  for (auto& b : log->records) {
    for (auto& c : b.completed)
      CAF_CHECK(c.id == good.id);
    for (auto& f : b.failed)
      failed[f.ref.id == throwing.id   ? "throwing"
             : f.ref.id == refusing.id ? "refusing"
                                       : "quitting"]
        = f;
  }
  CAF_REQUIRE_EQUAL(failed.size(), 3u);
  CAF_MESSAGE("throwing: " << failed["throwing"].error);
  CAF_MESSAGE("quitting: " << failed["quitting"].error);
  CAF_CHECK(failed["throwing"].retryable);
  CAF_CHECK(failed["quitting"].retryable);
  CAF_CHECK(failed["quitting"].error.find("gave up") != std::string::npos);
  CAF_CHECK(!failed["refusing"].retryable);
  // The runtime carries on: it still claims.
  auto calls = log->claim_calls;
  anon_send(d, rescan_atom::value);
  sched.run();
  CAF_CHECK_GREATER(log->claim_calls, calls);
  anon_send_exit(d, exit_reason::user_shutdown);
  sched.run();
}

CAF_TEST(idle channel actors retire) {
  claim_result batch;
  batch.tasks = {make_task("ok"), make_task("ok")};
  batch.tasks[1].channel_args = "other";
  log->claims.push_back(batch);
  cfg.channel_idle_timeout = 10s;
  cfg.max_poll_wait = 1h;
  cfg.keep_alive_interval = 1h;
  auto d = start();
  sched.run();
  auto channels = [&] {
    self->send(d, stats_atom::value);
    sched.run();
    int result = -1;
    self->receive([&](const runner_stats& x) { result = x.channels; });
    return result;
  };
  CAF_CHECK_EQUAL(channels(), 2);
  sched.advance_time(10s);
  sched.run();
  CAF_CHECK_EQUAL(channels(), 0);
  anon_send_exit(d, exit_reason::user_shutdown);
  sched.run();
}

CAF_TEST_FIXTURE_SCOPE_END()
