// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE workflows
#include <caf/test/unit_test.hpp>

#include <algorithm>
#include <future>
#include <set>
#include <thread>

#include <pqxx/pqxx>

#include "cafmq/admin.hpp"
#include "cafmq/current_task.hpp"
#include "cafmq/workflow.hpp"
#include "support/db_fixture.hpp"
#include "support/queue_helpers.hpp"

using namespace cafmq;
using namespace cafmq::test;
using namespace std::chrono_literals;

namespace {

// A task named `name` with a chosen id, so that a later task of the same
// call can name it as a parent.
spawn_builder task(const std::string& name) {
  return spawn_builder{name}.id(uuid::time_ordered());
}

uuid id_of(const spawn_builder& x) {
  return *x.id();
}

std::string text(const uuid& x) {
  return to_string(x);
}

struct workflow_fixture : db_fixture {
  // Claims every ready task of the given names (one claim).
  claim_result claim(std::vector<std::string> names, int limit = 100) {
    return claim_or_throw(*q, request(std::move(names), limit));
  }

  // Claims the one ready task `name` and returns it.
  claimed_task claim_one(const std::string& name) {
    auto got = claim({name});
    CAF_REQUIRE_EQUAL(got.tasks.size(), 1u);
    return got.tasks.front();
  }

  void complete(const claimed_task& t, const std::string& result = {}) {
    auto done = q->complete({{t.id, t.attempt}},
                            result.empty() ? std::vector<std::string>{}
                                           : std::vector<std::string>{result});
    CAF_REQUIRE(done && done->size() == 1u);
  }

  void fail(const claimed_task& t, const std::string& error) {
    auto failed = q->fail({attempt_failure{{t.id, t.attempt}, error, false}});
    CAF_REQUIRE(failed && failed->size() == 1u);
  }

  int parents_left(const uuid& id) {
    return query_value<int>("SELECT parents_left FROM cafmq.tasks_live WHERE "
                            "id = '"
                            + text(id) + "'");
  }

  std::string last_error(const uuid& id) {
    return query_value<std::string>("SELECT coalesce(last_error, '') FROM "
                                    "cafmq.tasks WHERE id = '"
                                    + text(id) + "'");
  }

  // Whether cafmq.spawn(json) refuses one spec with the extra fields
  // `fields` with an error that says `why`.
  bool sql_spawn_refused(const std::string& fields, const std::string& why) {
    try {
      pqxx::nontransaction{*conn}.exec(
        "SELECT * FROM cafmq.spawn(json_build_array(json_build_object('id', "
        "gen_random_uuid(), 'name', 'z', 'channel_name', '', 'channel_args', "
        "'', 'ordered', false, 'max_attempts', 1, 'backoff_us', 0, "
        "'backoff_cap_us', 0, "
        + fields + ")))");
    } catch (const pqxx::sql_error& e) {
      return std::string{e.what()}.find(why) != std::string::npos;
    }
    return false;
  }

  // Whether backend `pid` comes to a state where `condition` (over
  // pg_stat_activity) holds, within a minute.
  bool backend_comes_to(int pid, const std::string& condition) {
    auto holds = [&] {
      return query_value<bool>("SELECT count(*) > 0 FROM pg_stat_activity "
                               "WHERE "
                               + condition
                               + " AND pid = " + std::to_string(pid));
    };
    auto until = std::chrono::steady_clock::now() + 60s;
    while (!holds() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(1ms);
    return holds();
  }

  int task_count() {
    return query_value<int>("SELECT count(*) FROM cafmq.tasks");
  }

  std::shared_ptr<queue_connection> q = poller();
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(workflow_tests, workflow_fixture)

CAF_TEST(a child waits for every parent and is ready with the last) {
  auto a = task("a"), b = task("b");
  auto c = task("c").after({id_of(a), id_of(b)});
  spawn_or_throw(*conn, {a, b, c});
  CAF_CHECK_EQUAL(state_of(*conn, id_of(c)), "waiting");
  CAF_CHECK_EQUAL(parents_left(id_of(c)), 2);
  // Only the parents are claimed.
  auto got = claim({"a", "b", "c"});
  CAF_REQUIRE_EQUAL(got.tasks.size(), 2u);
  auto& ta = got.tasks[0].name == "a" ? got.tasks[0] : got.tasks[1];
  auto& tb = got.tasks[0].name == "a" ? got.tasks[1] : got.tasks[0];
  complete(ta, R"({"sum": 3})");
  CAF_CHECK_EQUAL(state_of(*conn, id_of(c)), "waiting");
  CAF_CHECK_EQUAL(parents_left(id_of(c)), 1);
  CAF_CHECK(claim({"c"}).tasks.empty());
  // The last parent's completion readies the child, in its transaction:
  // rolled back, the child still waits.
  {
    auto other = connect();
    pqxx::work tx{*other};
    tx.exec_params("SELECT cafmq.complete(ARRAY[$1::uuid], ARRAY[$2::int])",
                   text(tb.id), tb.attempt);
    CAF_CHECK_EQUAL(state_of(*conn, id_of(c)), "waiting");
    CAF_CHECK_EQUAL(tx.exec_params1("SELECT state::text FROM "
                                    "cafmq.tasks_live WHERE id = $1",
                                    text(id_of(c)))[0]
                      .as<std::string>(),
                    "pending");
    tx.abort();
  }
  CAF_CHECK_EQUAL(state_of(*conn, id_of(c)), "waiting");
  complete(tb);
  CAF_CHECK_EQUAL(state_of(*conn, id_of(c)), "pending");
  // The child reads how its parents ended.
  auto tc = claim_one("c");
  CAF_REQUIRE(tc.parents_json.has_value());
  current_task ct{tc, nullptr};
  auto parents = ct.parent_results();
  CAF_REQUIRE_EQUAL(parents.size(), 2u);
  CAF_CHECK_EQUAL(parents[0].id, id_of(a));
  CAF_CHECK_EQUAL(parents[0].name, "a");
  CAF_CHECK(parents[0].state == task_state::completed);
  CAF_CHECK_EQUAL(parents[0].result, R"({"sum":3})");
  CAF_CHECK_EQUAL(parents[1].id, id_of(b));
  CAF_CHECK_EQUAL(parents[1].result, "");
  complete(tc);
  CAF_CHECK_EQUAL(state_of(*conn, id_of(c)), "completed");
  // A task without parents has none to read.
  spawn_or_throw(*conn, {spawn_builder{"plain"}});
  CAF_CHECK(!claim_one("plain").parents_json.has_value());
}

CAF_TEST(the last parent wakes the runners of the child channel) {
  auto listener = connect();
  struct heard : pqxx::notification_receiver {
    using pqxx::notification_receiver::notification_receiver;
    void operator()(const std::string& payload, int) override {
      got.insert(payload);
    }
    std::set<std::string> got;
  } ready{*listener, "cafmq_ready"};
  auto a = task("a").channel_name("up");
  auto c = task("c").channel_name("down").after({id_of(a)});
  spawn_or_throw(*conn, {a, c});
  // The spawn wakes the parent's channel only: the child is not ready.
  for (int i = 0; i < 30 && ready.got.empty(); ++i)
    listener->await_notification(1, 0);
  CAF_CHECK(ready.got.size() == 1u && ready.got.begin()->rfind("up", 0) == 0);
  ready.got.clear();
  complete(claim_one("a"));
  for (int i = 0; i < 30 && ready.got.empty(); ++i)
    listener->await_notification(1, 0);
  CAF_CHECK(ready.got == std::set<std::string>{"down"});
}

CAF_TEST(
  a failed parent cancels its children down the graph and runs the clean up) {
  auto a = task("a").retries(0);
  auto c = task("c").after({id_of(a)});
  auto d = task("d").after({id_of(c)});
  auto cleanup
    = task("cleanup").after({id_of(a)}).on_parent_failure(parent_failure::run);
  spawn_or_throw(*conn, {a, c, d, cleanup});
  fail(claim_one("a"), "boom");
  CAF_CHECK_EQUAL(state_of(*conn, id_of(a)), "failed");
  CAF_CHECK_EQUAL(state_of(*conn, id_of(c)), "cancelled");
  CAF_CHECK_EQUAL(last_error(id_of(c)),
                  "parent " + text(id_of(a)) + " failed: boom");
  CAF_CHECK_EQUAL(state_of(*conn, id_of(d)), "cancelled");
  CAF_CHECK_EQUAL(last_error(id_of(d)), "parent " + text(id_of(c))
                                          + " was cancelled: parent "
                                          + text(id_of(a)) + " failed: boom");
  CAF_CHECK_EQUAL(state_of(*conn, id_of(cleanup)), "pending");
  auto t = claim_one("cleanup");
  auto parents = current_task{t, nullptr}.parent_results();
  CAF_REQUIRE_EQUAL(parents.size(), 1u);
  CAF_CHECK(parents[0].state == task_state::failed);
  CAF_CHECK_EQUAL(parents[0].error, "boom");
  // The finished totals count what the graph ended.
  CAF_CHECK_EQUAL(query_value<int>("SELECT sum(tasks) FROM "
                                   "cafmq.finished_counts WHERE state = "
                                   "'cancelled'"),
                  2);
}

CAF_TEST(a retryable failure of a parent is not its end) {
  auto a = task("a").retries(2).backoff(0us);
  auto c = task("c").after({id_of(a)});
  spawn_or_throw(*conn, {a, c});
  auto t = claim_one("a");
  CAF_REQUIRE(q->fail({attempt_failure{{t.id, t.attempt}, "flaky", true}}));
  CAF_CHECK_EQUAL(state_of(*conn, id_of(a)), "pending");
  CAF_CHECK_EQUAL(state_of(*conn, id_of(c)), "waiting");
  complete(claim_one("a"));
  CAF_CHECK_EQUAL(state_of(*conn, id_of(c)), "pending");
}

CAF_TEST(bad parents are refused and nothing is written) {
  auto before = task_count();
  auto code = [](const caf::expected<std::vector<spawn_result>>& x) {
    return x ? errc::none : static_cast<errc>(x.error().code());
  };
  auto message = [](const caf::expected<std::vector<spawn_result>>& x) {
    return x ? std::string{} : to_string(x.error());
  };
  auto unknown = uuid::time_ordered();
  auto a = task("a");
  auto r = spawn_many(*conn, {a, task("c").after({id_of(a), unknown})});
  CAF_CHECK(code(r) == errc::invalid_argument);
  CAF_CHECK(message(r).find("parent " + text(unknown)) != std::string::npos);
  CAF_CHECK(message(r).find("unknown") != std::string::npos);
  auto self = task("self");
  r = spawn_many(*conn, {a, self.after({id_of(self)})});
  CAF_CHECK(code(r) == errc::invalid_argument);
  CAF_CHECK(message(r).find("depends on itself") != std::string::npos);
  CAF_CHECK(sql_spawn_refused("'parents', json_build_array(NULL)", "is NULL"));
  // A parent named later in the call: parents come first (no cycles).
  auto x = task("x"), y = task("y");
  x.after({id_of(y)});
  r = spawn_many(*conn, {x, y.after({id_of(x)})});
  CAF_CHECK(code(r) == errc::invalid_argument);
  CAF_CHECK(message(r).find("comes after it") != std::string::npos);
  // From SQL, a policy it does not know.
  CAF_CHECK(sql_spawn_refused("'parents', json_build_array('" + text(id_of(a))
                                + "'), 'on_parent_failure', 'ignore'",
                              "must be cancel or run"));
  CAF_CHECK_EQUAL(task_count(), before);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.task_parents"),
                  0);
}

CAF_TEST(a child of tasks spawned earlier follows how far they got) {
  auto done = task("done"), failed = task("failed").retries(0),
       running = task("running");
  spawn_or_throw(*conn, {done, failed, running});
  complete(claim_one("done"));
  fail(claim_one("failed"), "no");
  auto tr = claim_one("running");
  // Completed already: ready at once.
  auto c1 = task("c1").after({id_of(done)});
  spawn_or_throw(*conn, {c1});
  CAF_CHECK_EQUAL(state_of(*conn, id_of(c1)), "pending");
  // Failed already: cancelled at once, or ready when it runs anyway.
  auto c2 = task("c2").after({id_of(done), id_of(failed)});
  auto c3
    = task("c3").after({id_of(failed)}).on_parent_failure(parent_failure::run);
  spawn_or_throw(*conn, {c2, c3});
  CAF_CHECK_EQUAL(state_of(*conn, id_of(c2)), "cancelled");
  CAF_CHECK_EQUAL(last_error(id_of(c2)),
                  "parent " + text(id_of(failed)) + " failed: no");
  CAF_CHECK_EQUAL(state_of(*conn, id_of(c3)), "pending");
  // Running: the child waits, and the running parent is marked, so that
  // its completion readies the child.
  auto c4 = task("c4").after({id_of(running), id_of(done)});
  spawn_or_throw(*conn, {c4});
  CAF_CHECK_EQUAL(state_of(*conn, id_of(c4)), "waiting");
  CAF_CHECK_EQUAL(parents_left(id_of(c4)), 1);
  complete(tr);
  CAF_CHECK_EQUAL(state_of(*conn, id_of(c4)), "pending");
}

CAF_TEST(two transactions ending the last two parents ready the child once) {
  auto a = task("a"), b = task("b");
  auto c = task("c").after({id_of(a), id_of(b)});
  spawn_or_throw(*conn, {a, b, c});
  auto got = claim({"a", "b"});
  CAF_REQUIRE_EQUAL(got.tasks.size(), 2u);
  auto first = connect(), second = connect();
  pqxx::work t1{*first};
  t1.exec_params("SELECT cafmq.complete(ARRAY[$1::uuid], ARRAY[$2::int])",
                 text(got.tasks[0].id), got.tasks[0].attempt);
  // The second waits for the child's row until the first commits, then
  // counts down from what the first left.
  auto waiting = std::async(std::launch::async, [&] {
    pqxx::work t2{*second};
    t2.exec_params("SELECT cafmq.complete(ARRAY[$1::uuid], ARRAY[$2::int])",
                   text(got.tasks[1].id), got.tasks[1].attempt);
    t2.commit();
  });
  CAF_CHECK(waiting.wait_for(300ms) == std::future_status::timeout);
  t1.commit();
  waiting.get();
  CAF_CHECK_EQUAL(state_of(*conn, id_of(c)), "pending");
  CAF_CHECK_EQUAL(parents_left(id_of(c)), 0);
}

CAF_TEST(cancelling a workflow waits for a completing parent without a deadlock) {
  workflow w;
  auto a = w.add(spawn_builder{"a"});
  auto b = w.add(spawn_builder{"b"}, {a});
  auto d = w.add(spawn_builder{"d"}, {b}, parent_failure::run);
  CAF_REQUIRE(w.spawn(*conn));
  auto running = claim_one("a");
  // A completion of the parent has begun: it holds the parent's row.
  auto completer = connect(), canceller = connect();
  pqxx::work completion{*completer};
  completion.exec_params("SELECT 1 FROM cafmq.tasks_live WHERE id = $1 "
                         "FOR UPDATE",
                         text(a));
  auto pid = canceller->backendpid();
  auto cancelled = std::async(
    std::launch::async, [&] { return cancel_workflow(*canceller, w.id()); });
  // The cancel waits for that lock before it ends any child.
  CAF_REQUIRE(backend_comes_to(pid, "wait_event_type = 'Lock'"));
  CAF_CHECK_EQUAL(state_of(*conn, b), "waiting");
  // The completion goes on to ready the child, and commits: no deadlock.
  completion.exec_params("SELECT cafmq.complete(ARRAY[$1::uuid], "
                         "ARRAY[$2::int])",
                         text(a), running.attempt);
  completion.commit();
  auto counts = cancelled.get();
  CAF_REQUIRE(counts);
  CAF_CHECK_EQUAL(counts->cancelled, 2);
  CAF_CHECK_EQUAL(counts->requested, 0);
  CAF_CHECK_EQUAL(state_of(*conn, a), "completed");
  CAF_CHECK_EQUAL(state_of(*conn, b), "cancelled");
  CAF_CHECK_EQUAL(state_of(*conn, d), "cancelled");
}

CAF_TEST(
  a spawn after running parents does not deadlock with their completion) {
  auto a = task("a"), b = task("b");
  spawn_or_throw(*conn, {a, b});
  auto got = claim({"a", "b"});
  CAF_REQUIRE_EQUAL(got.tasks.size(), 2u);
  // The spawn locks the parents in id order; a completion of both holds
  // the later one first.
  auto low = std::min(id_of(a), id_of(b)), high = std::max(id_of(a), id_of(b));
  auto completer = connect(), spawner = connect();
  pqxx::work completion{*completer};
  completion.exec_params("SELECT 1 FROM cafmq.tasks_live WHERE id = $1 "
                         "FOR UPDATE",
                         text(high));
  auto child = task("c").after({id_of(a), id_of(b)});
  auto pid = spawner->backendpid();
  auto spawned
    = std::async(std::launch::async, [&] { return child.spawn(*spawner); });
  // The spawn reached the parents' locks: it waits, or pauses to try
  // again.
  CAF_REQUIRE(backend_comes_to(
    pid, "(wait_event_type = 'Lock' OR wait_event = 'PgSleep')"));
  // The completion takes the other parent and ends both: no deadlock.
  completion.exec_params("SELECT 1 FROM cafmq.tasks_live WHERE id = $1 "
                         "FOR UPDATE",
                         text(low));
  completion.exec_params("SELECT cafmq.complete(ARRAY[$1::uuid, $2::uuid], "
                         "ARRAY[$3::int, $4::int])",
                         text(got.tasks[0].id), text(got.tasks[1].id),
                         got.tasks[0].attempt, got.tasks[1].attempt);
  completion.commit();
  auto r = spawned.get();
  CAF_REQUIRE(r);
  // Both parents ended before the spawn committed: the child is ready.
  CAF_CHECK_EQUAL(state_of(*conn, id_of(child)), "pending");
}

CAF_TEST(two pollers completing a fan in concurrently ready its child once) {
  std::vector<spawn_builder> xs;
  std::vector<uuid> parents;
  for (int i = 0; i < 400; ++i) {
    xs.push_back(task("part"));
    parents.push_back(id_of(xs.back()));
  }
  auto sum = task("sum").after(parents);
  xs.push_back(sum);
  spawn_or_throw(*conn, xs);
  // 400 parents dealt into 128 slots (3 or 4 each): the child's row
  // counts the slots.
  CAF_CHECK_EQUAL(parents_left(id_of(sum)), 128);
  CAF_CHECK_EQUAL(query_value<int>("SELECT sum(parents_left) FROM "
                                   "cafmq.child_waits WHERE child = '"
                                   + text(id_of(sum)) + "'"),
                  400);
  CAF_CHECK_EQUAL(query_value<int>("SELECT min(parents_left) FROM "
                                   "cafmq.child_waits WHERE child = '"
                                   + text(id_of(sum)) + "'"),
                  3);
  auto drain = [&] {
    auto mine = poller();
    for (;;) {
      auto got = claim_or_throw(*mine, request({"part"}, 7));
      if (got.tasks.empty())
        return;
      std::vector<attempt_ref> refs;
      for (const auto& t : got.tasks)
        refs.push_back({t.id, t.attempt});
      auto done = mine->complete(refs);
      CAF_REQUIRE(done && done->size() == refs.size());
    }
  };
  std::thread one{drain}, two{drain};
  one.join();
  two.join();
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.tasks WHERE "
                                   "name = 'part' AND state = 'completed'"),
                  400);
  CAF_CHECK_EQUAL(state_of(*conn, id_of(sum)), "pending");
  CAF_CHECK_EQUAL(parents_left(id_of(sum)), 0);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.child_waits"),
                  0);
  auto t = claim_one("sum");
  CAF_CHECK_EQUAL(current_task(t, nullptr).parent_results().size(), 400u);
}

CAF_TEST(a workflow spawned uncommitted is committed as a whole) {
  auto a = task("a").commit_interval(1h);
  auto c = task("c").after({id_of(a)}).commit_interval(1h);
  spawn_or_throw(*conn, {a, c});
  CAF_CHECK_EQUAL(state_of(*conn, id_of(c)), "uncommitted");
  CAF_REQUIRE_EQUAL(commit(*conn, {id_of(a), id_of(c)})->size(), 2u);
  CAF_CHECK_EQUAL(state_of(*conn, id_of(a)), "pending");
  CAF_CHECK_EQUAL(state_of(*conn, id_of(c)), "waiting");
  complete(claim_one("a"));
  CAF_CHECK_EQUAL(state_of(*conn, id_of(c)), "pending");
  // A reservation whose parent ended before its commit is ready when
  // committed.
  auto p = task("p");
  spawn_or_throw(*conn, {p});
  auto r = task("r").after({id_of(p)}).commit_interval(1h);
  spawn_or_throw(*conn, {r});
  complete(claim_one("p"));
  CAF_CHECK_EQUAL(state_of(*conn, id_of(r)), "uncommitted");
  CAF_REQUIRE_EQUAL(commit(*conn, {id_of(r)})->size(), 1u);
  CAF_CHECK_EQUAL(state_of(*conn, id_of(r)), "pending");
}

CAF_TEST(an expired reservation cancels the children that wait for it) {
  auto a = task("a").commit_interval(1h);
  auto c = task("c").after({id_of(a)});
  spawn_or_throw(*conn, {a, c});
  pqxx::nontransaction{*conn}.exec0(
    "UPDATE cafmq.tasks_live SET commit_deadline = now() - interval '1 s' "
    "WHERE state = 'uncommitted'");
  CAF_CHECK_EQUAL(query_value<int>("SELECT cafmq.expire_reservations(10)"), 1);
  CAF_CHECK_EQUAL(state_of(*conn, id_of(c)), "cancelled");
  CAF_CHECK_EQUAL(last_error(id_of(c)),
                  "parent " + text(id_of(a))
                    + " was cancelled: removed (cleared, or an expired "
                      "reservation)");
}

CAF_TEST(a waiting ordered task holds its place and its unique key) {
  auto a = task("a");
  auto first = task("o").channel_name("line").ordered().after({id_of(a)});
  auto second = task("o").channel_name("line").ordered();
  spawn_or_throw(*conn, {a, first, second});
  // The second runs after the first, which waits for a.
  CAF_CHECK(claim({"o"}).tasks.empty());
  complete(claim_one("a"));
  auto t = claim_one("o");
  CAF_CHECK_EQUAL(t.id, id_of(first));
  // A waiting task holds its unique key.
  auto b = task("b");
  auto keyed = task("k").unique_key("only-one").after({id_of(b)});
  spawn_or_throw(*conn, {b, keyed});
  auto again = spawn_or_throw(*conn, {task("k").unique_key("only-one")});
  CAF_CHECK(!again.front().created);
  CAF_CHECK_EQUAL(again.front().id, id_of(keyed));
}

CAF_TEST(a parent whose unique key a live task holds stands for that task) {
  auto holder = task("h").unique_key("key");
  spawn_or_throw(*conn, {holder});
  auto dup = task("h").unique_key("key");
  auto c = task("c").after({id_of(dup)});
  auto res = spawn_or_throw(*conn, {dup, c});
  CAF_CHECK(!res[0].created);
  CAF_CHECK_EQUAL(state_of(*conn, id_of(c)), "waiting");
  complete(claim_one("h"));
  CAF_CHECK_EQUAL(state_of(*conn, id_of(c)), "pending");
}

CAF_TEST(cancelling a waiting task ends it and its children follow) {
  auto a = task("a");
  auto c = task("c").after({id_of(a)});
  auto d = task("d").after({id_of(c)}).on_parent_failure(parent_failure::run);
  spawn_or_throw(*conn, {a, c, d});
  CAF_CHECK_EQUAL(
    query_value<std::string>("SELECT cafmq.cancel('" + text(id_of(c)) + "')"),
    "cancelled");
  CAF_CHECK_EQUAL(state_of(*conn, id_of(c)), "cancelled");
  // d runs anyway, once its only parent ended.
  CAF_CHECK_EQUAL(state_of(*conn, id_of(d)), "pending");
  CAF_CHECK_EQUAL(state_of(*conn, id_of(a)), "pending");
}

CAF_TEST(a parent result outlives the history retention while a child waits) {
  auto a = task("a"), b = task("b");
  auto c = task("c").after({id_of(a), id_of(b)});
  spawn_or_throw(*conn, {a, b, c});
  complete(claim_one("a"), R"("kept")");
  // Retention removes a's history row; its end is still there for c.
  pqxx::nontransaction{*conn}.exec0("DELETE FROM cafmq.tasks_history WHERE "
                                    "name = 'a'");
  pqxx::nontransaction{*conn}.exec("SELECT cafmq.prune(interval '0 s', 1000)");
  complete(claim_one("b"));
  auto t = claim_one("c");
  auto parents = current_task{t, nullptr}.parent_results();
  CAF_REQUIRE_EQUAL(parents.size(), 2u);
  CAF_CHECK_EQUAL(parents[0].result, R"("kept")");
  // Once the child ended, prune removes the ends and the edges.
  complete(t);
  pqxx::nontransaction{*conn}.exec("SELECT cafmq.prune(interval '0 s', 1000)");
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM "
                                   "cafmq.parent_results"),
                  0);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.task_parents"),
                  0);
}

CAF_TEST(a retried parent brings the children it cancelled back to waiting) {
  auto a = task("a").retries(0), b = task("b").retries(0);
  auto c = task("c").after({id_of(a)});
  auto d = task("d").after({id_of(c)});
  auto e = task("e").after({id_of(a), id_of(b)});
  spawn_or_throw(*conn, {a, b, c, d, e});
  auto got = claim({"a", "b"});
  CAF_REQUIRE_EQUAL(got.tasks.size(), 2u);
  for (const auto& t : got.tasks)
    fail(t, "down");
  for (const auto& x : {c, d, e})
    CAF_CHECK_EQUAL(state_of(*conn, id_of(x)), "cancelled");
  auto cancelled = query_value<int>("SELECT coalesce(sum(tasks), 0) FROM "
                                    "cafmq.finished_counts WHERE state = "
                                    "'cancelled'");
  CAF_CHECK_EQUAL(cancelled, 3);
  CAF_REQUIRE(retry(*conn, {id_of(a)}));
  CAF_CHECK_EQUAL(state_of(*conn, id_of(a)), "pending");
  CAF_CHECK_EQUAL(state_of(*conn, id_of(c)), "waiting");
  CAF_CHECK_EQUAL(state_of(*conn, id_of(d)), "waiting");
  CAF_CHECK_EQUAL(last_error(id_of(c)), "");
  // e also waits for b, which failed too: it stays cancelled, whichever
  // parent its error names.
  CAF_CHECK_EQUAL(state_of(*conn, id_of(e)), "cancelled");
  CAF_CHECK_EQUAL(query_value<int>("SELECT coalesce(sum(tasks), 0) FROM "
                                   "cafmq.finished_counts WHERE state = "
                                   "'cancelled'"),
                  1);
  complete(claim_one("a"));
  complete(claim_one("c"));
  complete(claim_one("d"));
  CAF_CHECK_EQUAL(state_of(*conn, id_of(d)), "completed");
}

CAF_TEST(a workflow spawns its graph in one call with its id) {
  workflow w;
  auto a = w.add(spawn_builder{"a"});
  auto b = w.add(spawn_builder{"b"});
  auto sum = w.add(spawn_builder{"sum"}, {a, b});
  auto tidy = w.add(spawn_builder{"tidy"}, {sum}, parent_failure::run);
  auto res = w.spawn(*conn);
  CAF_REQUIRE(res);
  CAF_CHECK_EQUAL(res->size(), 4u);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.tasks WHERE "
                                   "workflow_id = '"
                                   + text(w.id()) + "'"),
                  4);
  CAF_CHECK_EQUAL(state_of(*conn, sum), "waiting");
  CAF_CHECK_EQUAL(query_value<std::string>("SELECT on_parent_failure FROM "
                                           "cafmq.tasks WHERE id = '"
                                           + text(tidy) + "'"),
                  "run");
  // All or nothing: a graph naming an unknown parent writes none of it.
  workflow bad;
  bad.add(spawn_builder{"a"});
  bad.add(spawn_builder{"b"}, {uuid::time_ordered()});
  CAF_CHECK(!bad.spawn(*conn));
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.tasks WHERE "
                                   "workflow_id = '"
                                   + text(bad.id()) + "'"),
                  0);
}

CAF_TEST(a batch runs on_success once when all completed and on_finish once when
           all ended) {
  batch ok;
  for (int i = 0; i < 5; ++i)
    ok.add(spawn_builder{"member"});
  ok.on_success(spawn_builder{"ok_success"}).on_finish(spawn_builder{"ok_end"});
  CAF_REQUIRE(ok.spawn(*conn));
  batch bad;
  bad.add(spawn_builder{"member"});
  bad.add(spawn_builder{"doomed"}.retries(0));
  bad.on_success(spawn_builder{"bad_success"})
    .on_finish(spawn_builder{"bad_end"});
  CAF_REQUIRE(bad.spawn(*conn));
  auto got = claim({"member", "doomed"});
  CAF_REQUIRE_EQUAL(got.tasks.size(), 7u);
  for (const auto& t : got.tasks)
    if (t.name == "doomed")
      fail(t, "no");
    else
      complete(t);
  auto end = claim_one("ok_end");
  auto counts = count_ends(current_task{end, nullptr}.parent_results());
  CAF_CHECK_EQUAL(counts.completed, 5);
  CAF_CHECK_EQUAL(counts.failed, 0);
  claim_one("ok_success");
  auto bad_end = claim_one("bad_end");
  counts = count_ends(current_task{bad_end, nullptr}.parent_results());
  CAF_CHECK_EQUAL(counts.completed, 1);
  CAF_CHECK_EQUAL(counts.failed, 1);
  CAF_CHECK(claim({"bad_success"}).tasks.empty());
  CAF_CHECK_EQUAL(query_value<std::string>("SELECT state::text FROM "
                                           "cafmq.tasks WHERE name = "
                                           "'bad_success'"),
                  "cancelled");
}

CAF_TEST(a readied child is claimed by its priority and its channel pause) {
  auto a = task("a");
  auto urgent = task("c").channel_name("x").priority(5).after({id_of(a)});
  spawn_or_throw(*conn, {a, urgent});
  spawn_or_throw(*conn, {spawn_builder{"c"}.channel_name("x")});
  CAF_REQUIRE(pause(*conn, pause_kind::channel, "x"));
  complete(claim_one("a"));
  CAF_CHECK_EQUAL(state_of(*conn, id_of(urgent)), "pending");
  // Paused: ready, but not claimed.
  CAF_CHECK(claim({"c"}).tasks.empty());
  CAF_REQUIRE(resume(*conn, pause_kind::channel, "x"));
  // The waiting task readied later runs first: its priority.
  auto got = claim({"c"}, 1);
  CAF_REQUIRE_EQUAL(got.tasks.size(), 1u);
  CAF_CHECK_EQUAL(got.tasks[0].id, id_of(urgent));
}

CAF_TEST(children readied together run within the limit of their channel) {
  channel_limit one;
  one.channel_name = "lim";
  one.max_running = 1;
  CAF_REQUIRE(!set_channel_limit(*conn, one));
  auto a = task("a");
  auto c1 = task("c").channel_name("lim").after({id_of(a)});
  auto c2 = task("c").channel_name("lim").after({id_of(a)});
  spawn_or_throw(*conn, {a, c1, c2});
  complete(claim_one("a"));
  CAF_CHECK_EQUAL(state_of(*conn, id_of(c1)), "pending");
  CAF_CHECK_EQUAL(state_of(*conn, id_of(c2)), "pending");
  // Both ready, one slot: one runs, the other waits for it.
  auto first = claim_one("c");
  CAF_CHECK(claim({"c"}).tasks.empty());
  complete(first);
  auto second = claim_one("c");
  CAF_CHECK_NOT_EQUAL(second.id, first.id);
}

CAF_TEST(
  a deadline counts from the spawn and ends a child that waited past it) {
  auto a = task("a");
  auto late = task("late")
                .after({id_of(a)})
                .deadline(spawn_builder::clock::now() + std::chrono::hours{1});
  spawn_or_throw(*conn, {a, late});
  // An hour passes while it waits.
  pqxx::nontransaction{*conn}.exec0(
    "UPDATE cafmq.tasks_live SET deadline = now() - interval '1 s' WHERE "
    "name = 'late'");
  complete(claim_one("a"));
  auto got = claim({"late"});
  CAF_CHECK(got.tasks.empty());
  CAF_REQUIRE_EQUAL(got.ended.size(), 1u);
  CAF_CHECK_EQUAL(got.ended[0].state, "failed");
  CAF_CHECK_EQUAL(last_error(id_of(late)),
                  "deadline passed before the task ran");
}

CAF_TEST(a retried parent counts again for a child that still waits) {
  batch b;
  auto m1 = b.add(spawn_builder{"m1"}.retries(0));
  auto m2 = b.add(spawn_builder{"m2"});
  b.on_finish(spawn_builder{"end"});
  CAF_REQUIRE(b.spawn(*conn));
  fail(claim_one("m1"), "once");
  CAF_CHECK_EQUAL(query_value<std::string>("SELECT state::text FROM "
                                           "cafmq.tasks WHERE name = 'end'"),
                  "waiting");
  CAF_REQUIRE(retry(*conn, {m1}));
  complete(claim_one("m1"));
  CAF_CHECK_EQUAL(query_value<std::string>("SELECT state::text FROM "
                                           "cafmq.tasks WHERE name = 'end'"),
                  "waiting");
  complete(claim_one("m2"));
  auto end = claim_one("end");
  CAF_CHECK_EQUAL(
    count_ends(current_task{end, nullptr}.parent_results()).completed, 2);
  CAF_CHECK(state_of(*conn, m2) == "completed");
}

CAF_TEST(parents retried one at a time revive the child both had cancelled) {
  auto p1 = task("p1").retries(0), p2 = task("p2").retries(0);
  auto c = task("c").after({id_of(p1), id_of(p2)});
  spawn_or_throw(*conn, {p1, p2, c});
  auto got = claim({"p1", "p2"});
  CAF_REQUIRE_EQUAL(got.tasks.size(), 2u);
  for (const auto& t : got.tasks)
    fail(t, "down");
  CAF_REQUIRE(retry(*conn, {id_of(p1)}));
  CAF_CHECK_EQUAL(state_of(*conn, id_of(c)), "cancelled");
  CAF_REQUIRE(retry(*conn, {id_of(p2)}));
  CAF_CHECK_EQUAL(state_of(*conn, id_of(c)), "waiting");
  CAF_CHECK_EQUAL(parents_left(id_of(c)), 2);
}

CAF_TEST(a child retried by hand waits for its parents that are live) {
  auto a = task("a");
  auto c = task("c").after({id_of(a)});
  spawn_or_throw(*conn, {a, c});
  CAF_CHECK_EQUAL(
    query_value<std::string>("SELECT cafmq.cancel('" + text(id_of(c)) + "')"),
    "cancelled");
  CAF_REQUIRE(retry(*conn, {id_of(c)}));
  CAF_CHECK_EQUAL(state_of(*conn, id_of(c)), "waiting");
  complete(claim_one("a"));
  CAF_CHECK_EQUAL(state_of(*conn, id_of(c)), "pending");
}

CAF_TEST(a spawn again of a parent with its id and unique key links its child) {
  auto p = task("p").unique_key("only");
  spawn_or_throw(*conn, {p});
  auto c = task("c").after({id_of(p)});
  auto res = spawn_or_throw(*conn, {p, c});
  CAF_CHECK(!res[0].created);
  CAF_CHECK_EQUAL(state_of(*conn, id_of(c)), "waiting");
  complete(claim_one("p"));
  CAF_CHECK_EQUAL(state_of(*conn, id_of(c)), "pending");
}

CAF_TEST_FIXTURE_SCOPE_END()
