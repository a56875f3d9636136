// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE cancel
#include <caf/test/unit_test.hpp>

#include <map>
#include <thread>

#include "support/db_fixture.hpp"
#include "support/process.hpp"
#include "support/queue_helpers.hpp"

using namespace cafmq;
using namespace cafmq::test;

CAF_TEST_FIXTURE_SCOPE(cancel_tests, db_fixture)

CAF_TEST(pending scheduled and uncommitted tasks are cancelled at once) {
  auto pending = spawn_builder{"t"}.spawn(*conn)->id;
  auto scheduled
    = spawn_builder{"t"}.delay(std::chrono::hours{1}).spawn(*conn)->id;
  auto reserved = spawn_builder{"t"}
                    .commit_interval(std::chrono::minutes{5})
                    .spawn(*conn)
                    ->id;
  for (auto& id : {pending, scheduled, reserved}) {
    auto result = cancel(*conn, id);
    CAF_REQUIRE(result);
    CAF_CHECK_EQUAL(to_string(*result), "cancelled");
    CAF_CHECK_EQUAL(state_of(*conn, id), "cancelled");
  }
  // Never run, even once their time comes.
  for (auto& id : {scheduled, reserved})
    age_task(*conn, id, 7200);
  CAF_CHECK(commit(*conn, {reserved})->empty());
  auto q = poller();
  CAF_CHECK(claim_or_throw(*q, request({"t"})).tasks.empty());
}

CAF_TEST(unknown and finished tasks get distinct errors) {
  auto unknown = cancel(*conn, uuid::random());
  CAF_REQUIRE(!unknown);
  CAF_CHECK_EQUAL(code_of(unknown.error()), errc::unknown_task);
  auto id = spawn_builder{"t"}.spawn(*conn)->id;
  auto q = poller();
  auto t = claim_or_throw(*q, request({"t"})).tasks.at(0);
  CAF_REQUIRE(q->complete({{t.id, t.attempt}}));
  auto finished = cancel(*conn, id);
  CAF_REQUIRE(!finished);
  CAF_CHECK_EQUAL(code_of(finished.error()), errc::task_finished);
  CAF_MESSAGE(render(finished.error()));
  CAF_CHECK_EQUAL(state_of(*conn, id), "completed");
}

CAF_TEST(cancelling a cancelled task again is task_finished) {
  auto id = spawn_builder{"t"}.spawn(*conn)->id;
  auto first = cancel(*conn, id);
  CAF_REQUIRE(first);
  CAF_CHECK_EQUAL(to_string(*first), "cancelled");
  auto again = cancel(*conn, id);
  CAF_REQUIRE(!again);
  CAF_CHECK_EQUAL(code_of(again.error()), errc::task_finished);
  CAF_CHECK_EQUAL(render(again.error()), "cafmq::task_finished: task "
                                           + to_string(id)
                                           + " already cancelled");
  // The command-line tool says so and exits non-zero.
  std::string output;
  auto rc
    = finish_process(start_process(std::string{CAFMQ_CLI} + " '--database-url="
                                   + url + "' cancel " + to_string(id)),
                     output);
  CAF_CHECK_NOT_EQUAL(rc, 0);
  CAF_CHECK_EQUAL(output, "cafmq: cafmq::task_finished: task " + to_string(id)
                            + " already cancelled\n");
}

CAF_TEST(a cancel in a rolled back transaction cancels nothing) {
  auto id = spawn_builder{"t"}.spawn(*conn)->id;
  auto listener = connect();
  pqxx::nontransaction{*listener}.exec0("LISTEN cafmq_cancel");
  {
    pqxx::work tx{*conn};
    CAF_REQUIRE(cancel(tx, id));
  }
  CAF_CHECK_EQUAL(state_of(*conn, id), "pending");
  auto q = poller();
  auto t = claim_or_throw(*q, request({"t"})).tasks.at(0);
  {
    pqxx::work tx{*conn};
    auto requested = cancel(tx, id);
    CAF_REQUIRE(requested);
    CAF_CHECK_EQUAL(to_string(*requested), "requested");
  }
  auto st = status(*conn, id);
  CAF_CHECK(!st->cancel_requested);
  pqxx::nontransaction{*conn}.exec("SELECT 1");
  CAF_CHECK_EQUAL(listener->get_notifs(), 0);
  (void)t;
}

CAF_TEST(cancelling a running task requests it and ends it cancelled) {
  auto id = spawn_builder{"t"}.retries(5).spawn(*conn)->id;
  auto q = poller();
  auto t = claim_or_throw(*q, request({"t"})).tasks.at(0);
  auto listener = connect();
  pqxx::nontransaction{*listener}.exec0("LISTEN cafmq_cancel");
  auto result = cancel(*conn, id);
  CAF_REQUIRE(result);
  CAF_CHECK_EQUAL(to_string(*result), "requested");
  CAF_CHECK_EQUAL(listener->await_notification(5, 0), 1);
  // The runner sees the flag at its lease renewal even without the NOTIFY.
  auto owned = q->keep_alive({{t.id, t.attempt}}, std::chrono::seconds{30});
  CAF_REQUIRE(owned && owned->size() == 1u);
  CAF_CHECK(owned->at(0).cancel_requested);
  // The handler stops with an error: cancelled, not retried.
  auto failed = q->fail({{{t.id, t.attempt}, "stopped on request", true}});
  CAF_REQUIRE(failed && failed->size() == 1u);
  CAF_CHECK_EQUAL(failed->at(0).state, "cancelled");
  CAF_CHECK_EQUAL(state_of(*conn, id), "cancelled");
}

CAF_TEST(a renewal that finds an attempt written meanwhile says it ended) {
  // Two attempts; one is completed (its outcome written) while the other
  // runs. A renewal of both renews the running one, and reports the other
  // ended, not lost. An attempt taken over is neither.
  spawn_or_throw(*conn,
                 {spawn_builder{"t"}, spawn_builder{"t"}, spawn_builder{"t"}});
  auto q = poller();
  auto xs = claim_or_throw(*q, request({"t"})).tasks;
  CAF_REQUIRE_EQUAL(xs.size(), 3u);
  attempt_ref done{xs[0].id, xs[0].attempt};
  attempt_ref running{xs[1].id, xs[1].attempt};
  attempt_ref taken{xs[2].id, xs[2].attempt};
  CAF_REQUIRE(!q->complete(done, ""));
  pqxx::nontransaction{*conn}.exec0(
    "UPDATE cafmq.tasks_live SET attempt = attempt + 1 WHERE id = '"
    + to_string(taken.id) + "'");
  auto states = q->keep_alive({done, running, taken}, std::chrono::seconds{30});
  CAF_REQUIRE(states);
  std::map<uuid, bool> ended;
  for (auto& x : *states)
    ended[x.id] = x.ended;
  CAF_CHECK_EQUAL(ended.size(), 2u);
  CAF_CHECK(ended.at(done.id));
  CAF_CHECK(!ended.at(running.id));
  CAF_CHECK_EQUAL(ended.count(taken.id), 0u);
  // One attempt at a time: an ended one was not renewed.
  CAF_CHECK(q->keep_alive(running, std::chrono::seconds{30}) == caf::none);
  CAF_CHECK_EQUAL(code_of(q->keep_alive(done, std::chrono::seconds{30})),
                  errc::stale_attempt);
}

CAF_TEST(a task whose lease expired is not re run after a cancel) {
  auto id = spawn_builder{"t"}.retries(5).spawn(*conn)->id;
  auto q = poller();
  CAF_REQUIRE_EQUAL(claim_or_throw(*q, request({"t"})).tasks.size(), 1u);
  CAF_REQUIRE(cancel(*conn, id));
  age_task(*conn, id, 3600); // its runner died without seeing the cancel
  CAF_CHECK(claim_or_throw(*q, request({"t"})).tasks.empty());
  CAF_CHECK_EQUAL(state_of(*conn, id), "cancelled");
}

CAF_TEST(a task past its deadline fails without running) {
  auto id
    = spawn_builder{"t"}
        .deadline(std::chrono::system_clock::now() - std::chrono::seconds{1})
        .spawn(*conn)
        ->id;
  auto q = poller();
  CAF_CHECK(claim_or_throw(*q, request({"t"})).tasks.empty());
  auto st = status(*conn, id);
  CAF_CHECK_EQUAL(to_string(st->state), "failed");
  CAF_CHECK_EQUAL(st->attempt, 0);
  CAF_CHECK(st->last_error
            == std::string{"deadline passed before the task ran"});
}

CAF_TEST(a failure is not retried past the deadline) {
  auto id
    = spawn_builder{"t"}
        .retries(5)
        .backoff(std::chrono::seconds{60})
        .deadline(std::chrono::system_clock::now() + std::chrono::seconds{30})
        .spawn(*conn)
        ->id;
  auto q = poller();
  auto t = claim_or_throw(*q, request({"t"})).tasks.at(0);
  CAF_REQUIRE(t.deadline_in.has_value());
  CAF_CHECK_LESS_OR_EQUAL(t.deadline_in->count(), 30LL * 1000000);
  auto failed = q->fail({{{t.id, t.attempt}, "timeout", true}});
  CAF_REQUIRE(failed && failed->size() == 1u);
  // The retry would start after the deadline: fail now.
  CAF_CHECK_EQUAL(failed->at(0).state, "failed");
  CAF_CHECK_EQUAL(state_of(*conn, id), "failed");
}

CAF_TEST(finished tasks are pruned after the retention by one node at a time) {
  std::vector<spawn_builder> xs(5, spawn_builder{"t"});
  for (auto& x : xs)
    x.id(uuid::random());
  spawn_or_throw(*conn, xs);
  auto q = poller();
  auto batch = claim_or_throw(*q, request({"t"}));
  std::vector<attempt_ref> refs;
  for (auto& t : batch.tasks)
    refs.push_back({t.id, t.attempt});
  CAF_REQUIRE(q->complete({refs[0], refs[1], refs[2]}));
  // Too young to prune.
  CAF_CHECK_EQUAL(
    value_or(prune(*conn, std::chrono::hours{24}), std::int64_t{-2}), 0);
  pqxx::nontransaction{*conn}.exec0(
    "UPDATE cafmq.tasks_history SET finished_at = "
    "now() - interval '25 hours' WHERE "
    "finished_at IS NOT NULL");
  // While another transaction prunes, a second pruner skips.
  auto other = connect();
  pqxx::work holder{*other};
  holder.exec("SELECT cafmq.prune('24 hours', 1)");
  CAF_CHECK_EQUAL(
    value_or(prune(*conn, std::chrono::hours{24}), std::int64_t{-2}), -1);
  holder.commit();
  CAF_CHECK_EQUAL(
    value_or(prune(*conn, std::chrono::hours{24}, 1), std::int64_t{-2}), 1);
  CAF_CHECK_EQUAL(
    value_or(prune(*conn, std::chrono::hours{24}), std::int64_t{-2}), 1);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.tasks"), 2);
}

CAF_TEST(watch reports the current state then every change to the end) {
  auto id = spawn_builder{"t"}.retries(3).spawn(*conn)->id;
  std::vector<std::string> seen;
  std::atomic<bool> watching{false};
  caf::error result;
  std::thread watcher{[&] {
    result = watch(
      url, id,
      [&](const task_status& st) {
        seen.push_back(to_string(st.state) + "/" + std::to_string(st.attempt));
        watching = true;
      },
      std::chrono::milliseconds{200});
  }};
  while (!watching)
    std::this_thread::yield();
  // Wait until the watch is registered before changing the task.
  while (query_value<int>("SELECT count(*) FROM cafmq.watches") == 0)
    std::this_thread::yield();
  auto q = poller();
  auto t1 = claim_or_throw(*q, request({"t"})).tasks.at(0);
  CAF_REQUIRE(q->fail({{{t1.id, t1.attempt}, "boom", true}}));
  age_task(*conn, id, 3600);
  auto t2 = claim_or_throw(*q, request({"t"})).tasks.at(0);
  CAF_REQUIRE(q->complete({{t2.id, t2.attempt}}));
  watcher.join();
  CAF_CHECK(!result);
  CAF_CHECK_EQUAL(
    seen, (std::vector<std::string>{"pending/0", "running/1", "pending/1",
                                    "running/2", "completed/2"}));
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.watches"), 0);
}

CAF_TEST(watching an unknown id fails at once) {
  auto err = watch(url, uuid::random(), [](const task_status&) {});
  CAF_CHECK_EQUAL(code_of(err), errc::unknown_task);
}

CAF_TEST_FIXTURE_SCOPE_END()
