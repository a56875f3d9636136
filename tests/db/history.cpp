// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE history
#include <caf/test/unit_test.hpp>

#include <future>
#include <sstream>
#include <thread>

#include "cafmq/admin.hpp"
#include "cafmq/current_task.hpp"
#include "support/db_fixture.hpp"
#include "support/queue_helpers.hpp"

using namespace cafmq;
using namespace cafmq::test;
using namespace std::chrono_literals;

namespace {

struct history_fixture : db_fixture {
  int live() {
    return query_value<int>("SELECT count(*) FROM cafmq.tasks_live");
  }

  int finished() {
    return query_value<int>("SELECT count(*) FROM cafmq.tasks_history");
  }

  // The task's row in the live table or the history as JSON, without the
  // columns an ending changes.
  std::string row_of(const char* table, const uuid& id) {
    return query_value<std::string>(
      std::string{"SELECT (to_jsonb(t) - ARRAY['state', 'finished_at', "
                  "'lost_attempts', 'result', 'last_error'])::text FROM "}
      + table + " t WHERE id = '" + to_string(id) + "'");
  }

  // The partition that holds the finished task.
  std::string partition_of(const uuid& id) {
    return query_value<std::string>(
      "SELECT tableoid::regclass::text FROM cafmq.tasks_history WHERE id = '"
      + to_string(id) + "'");
  }

  // Drops the daily partitions (as on a database whose maintenance has not
  // run for days).
  void drop_days() {
    std::istringstream in{history_days(*conn)};
    for (std::string name; in >> name;)
      pqxx::nontransaction{*conn}.exec0("DROP TABLE cafmq." + name);
  }

  // The history's tasks per UTC day, channel and state, as counted by the
  // finishing statements (finished_counts) and as the rows say.
  std::pair<std::string, std::string> counts() {
    auto counted = query_value<std::string>(
      "SELECT coalesce(string_agg(k || '=' || n, ' ' ORDER BY k), '') FROM "
      "(SELECT day || '/' || channel_name || '/' || state AS k, sum(tasks) AS "
      "n FROM cafmq.finished_counts GROUP BY 1 HAVING sum(tasks) <> 0) x");
    auto held = query_value<std::string>(
      "SELECT coalesce(string_agg(k || '=' || n, ' ' ORDER BY k), '') FROM "
      "(SELECT (finished_at AT TIME ZONE 'UTC')::date || '/' || channel_name "
      "|| '/' || state AS k, count(*) AS n FROM cafmq.tasks_history GROUP BY "
      "1) x");
    return {counted, held};
  }

  // Claims the one ready task named `name`.
  claimed_task claim_one(queue_connection& q, const std::string& name) {
    auto batch = claim_or_throw(q, request({name}, 1));
    if (batch.tasks.size() != 1)
      throw std::runtime_error("claimed " + std::to_string(batch.tasks.size()));
    return batch.tasks[0];
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(history_tests, history_fixture)

CAF_TEST(each ending moves its task to the history with every column kept) {
  auto done = spawn_builder{"done"}
                .channel_name("c")
                .channel_args("a")
                .json(nlohmann::json{{"k", std::string(300, 'x')}})
                .unique_key("u1")
                .priority(3)
                .timeout(5min)
                .deadline(std::chrono::system_clock::now() + 1h)
                .spawn(*conn)
                ->id;
  auto broken = spawn_builder{"broken"}.bytes("\x01\x02").spawn(*conn)->id;
  auto dropped = spawn_builder{"dropped"}.delay(1h).spawn(*conn)->id;
  auto late = spawn_builder{"late"}.delay(1h).spawn(*conn)->id;
  auto q = poller();
  auto a = claim_one(*q, "done");
  auto b = claim_one(*q, "broken");
  auto done_row = row_of("cafmq.tasks_live", done);
  auto broken_row = row_of("cafmq.tasks_live", broken);
  auto dropped_row = row_of("cafmq.tasks_live", dropped);
  CAF_REQUIRE(q->complete({{a.id, a.attempt}}, {"{\"sent\": 1}"}));
  CAF_REQUIRE(q->fail({{{b.id, b.attempt}, "boom", false}}));
  CAF_CHECK_EQUAL(to_string(*cancel(*conn, dropped)), "cancelled");
  // A deadline that passed before the task ran: its claim ends it.
  pqxx::nontransaction{*conn}.exec0(
    "UPDATE cafmq.tasks_live SET run_at = now(), deadline = now() WHERE id = '"
    + to_string(late) + "'");
  auto ended = claim_or_throw(*q, request({"late"}, 1));
  CAF_CHECK(ended.tasks.empty());
  CAF_REQUIRE_EQUAL(ended.ended.size(), 1u);
  CAF_CHECK_EQUAL(ended.ended[0].state, "failed");
  CAF_CHECK_EQUAL(live(), 0);
  CAF_CHECK_EQUAL(finished(), 4);
  CAF_CHECK_EQUAL(state_of(*conn, done), "completed");
  CAF_CHECK_EQUAL(state_of(*conn, broken), "failed");
  CAF_CHECK_EQUAL(state_of(*conn, dropped), "cancelled");
  CAF_CHECK_EQUAL(state_of(*conn, late), "failed");
  // Everything else as it was, payloads included.
  CAF_CHECK_EQUAL(row_of("cafmq.tasks_history", done), done_row);
  CAF_CHECK_EQUAL(row_of("cafmq.tasks_history", broken), broken_row);
  // A cancel asked is recorded: compare without it.
  auto without_cancel = [&](const std::string& row) {
    return query_value<std::string>("SELECT ('" + row
                                    + "'::jsonb - 'cancel_requested')::text");
  };
  CAF_CHECK_EQUAL(without_cancel(row_of("cafmq.tasks_history", dropped)),
                  without_cancel(dropped_row));
  CAF_CHECK_EQUAL(
    query_value<std::string>("SELECT result::text FROM cafmq.tasks WHERE id = '"
                             + to_string(done) + "'"),
    "{\"sent\": 1}");
  CAF_CHECK_EQUAL(
    query_value<std::string>("SELECT last_error FROM cafmq.tasks WHERE id = '"
                             + to_string(late) + "'"),
    "deadline passed before the task ran");
  // Finished, its unique key is free again.
  CAF_CHECK(spawn_builder{"done"}.unique_key("u1").spawn(*conn)->created);
}

CAF_TEST(an outcome for a task already in the history changes nothing) {
  auto id = spawn_builder{"t"}.spawn(*conn)->id;
  auto q = poller();
  auto t = claim_one(*q, "t");
  CAF_REQUIRE_EQUAL(q->complete({{t.id, t.attempt}})->size(), 1u);
  auto row = row_of("cafmq.tasks_history", id);
  // Fenced: the same attempt again, a failure, a renewal, a give-back.
  CAF_CHECK(q->complete({{t.id, t.attempt}})->empty());
  CAF_CHECK(q->fail({{{t.id, t.attempt}, "late", true}})->empty());
  CAF_CHECK(q->release({{t.id, t.attempt}})->empty());
  auto renewed = q->keep_alive({{t.id, t.attempt}}, 30s);
  CAF_REQUIRE(renewed);
  CAF_CHECK(!renewed_one(*renewed));
  CAF_CHECK_EQUAL(row_of("cafmq.tasks_history", id), row);
  CAF_CHECK_EQUAL(state_of(*conn, id), "completed");
  CAF_CHECK_EQUAL(finished(), 1);
  CAF_CHECK_EQUAL(live(), 0);
}

CAF_TEST(a cancel that waited for a completion says the task completed) {
  auto id = spawn_builder{"t"}.spawn(*conn)->id;
  auto q = poller();
  auto t = claim_one(*q, "t");
  // The completion holds the row's lock, uncommitted, while the cancel
  // waits for it on another connection.
  auto other = connect();
  pqxx::work tx{*other};
  tx.exec_params("SELECT cafmq.complete(ARRAY[$1::uuid], ARRAY[$2::integer])",
                 to_string(id), t.attempt);
  auto waiting = std::async(std::launch::async, [&] {
    auto c = connect();
    return cancel(*c, id);
  });
  // The cancel is blocked on the lock: wait for it to show.
  for (int i = 0; i < 6000; ++i) {
    if (query_value<int>("SELECT count(*) FROM pg_stat_activity WHERE "
                         "wait_event_type = 'Lock' AND query LIKE "
                         "'%cafmq.cancel%'")
        > 0)
      break;
    std::this_thread::sleep_for(10ms);
  }
  tx.commit();
  auto answer = waiting.get();
  CAF_REQUIRE(!answer);
  CAF_CHECK_EQUAL(code_of(answer.error()), errc::task_finished);
  CAF_CHECK_EQUAL(render(answer.error()), "cafmq::task_finished: task "
                                            + to_string(id)
                                            + " already completed");
  CAF_CHECK_EQUAL(state_of(*conn, id), "completed");
}

CAF_TEST(a retry moves a task back to the live table) {
  auto id = spawn_builder{"t"}.unique_key("k").retries(0).spawn(*conn)->id;
  auto q = poller();
  auto t = claim_one(*q, "t");
  CAF_REQUIRE(q->fail({{{t.id, t.attempt}, "boom", false}}));
  CAF_CHECK_EQUAL(finished(), 1);
  // While a live task holds its unique key, it stays in the history.
  auto holder = spawn_builder{"t"}.unique_key("k").spawn(*conn)->id;
  auto refused = retry(*conn, {id});
  CAF_REQUIRE(refused);
  CAF_CHECK(refused->retried.empty());
  CAF_CHECK_EQUAL(state_of(*conn, id), "failed");
  CAF_CHECK_EQUAL(finished(), 1);
  CAF_CHECK_EQUAL(to_string(*cancel(*conn, holder)), "cancelled");
  auto r = retry(*conn, {id});
  CAF_REQUIRE(r);
  CAF_CHECK(r->retried == std::vector<uuid>{id});
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.tasks_live "
                                   "WHERE id = '"
                                   + to_string(id) + "' AND state = 'pending'"),
                  1);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.tasks WHERE "
                                   "id = '"
                                   + to_string(id) + "'"),
                  1);
  // It runs again, and its new attempt is the next number.
  auto again = claim_one(*q, "t");
  CAF_CHECK_EQUAL(again.attempt, t.attempt + 1);
  CAF_CHECK_EQUAL(q->complete({{again.id, again.attempt}})->size(), 1u);
  CAF_CHECK_EQUAL(state_of(*conn, id), "completed");
}

CAF_TEST(an id a finished task holds is refused to a new spawn) {
  auto id = uuid::random();
  CAF_REQUIRE(spawn_builder{"t"}.id(id).spawn(*conn));
  CAF_CHECK_EQUAL(to_string(*cancel(*conn, id)), "cancelled");
  auto again = spawn_builder{"t"}.id(id).spawn(*conn);
  CAF_REQUIRE(!again);
  CAF_CHECK_EQUAL(code_of(again.error()), errc::duplicate_id);
  CAF_CHECK_EQUAL(render(again.error()), "cafmq::duplicate_id: task "
                                           + to_string(id) + " already exists");
  // In a batch large enough for COPY, and from SQL: nothing is written.
  std::vector<spawn_builder> xs(600, spawn_builder{"t"});
  xs.back().id(id);
  auto batch = spawn_many(*conn, xs);
  CAF_REQUIRE(!batch);
  CAF_CHECK_EQUAL(code_of(batch.error()), errc::duplicate_id);
  auto from_sql = false;
  try {
    pqxx::nontransaction{*conn}.exec("SELECT cafmq.spawn('t', 'null'::jsonb, "
                                     "id => '"
                                     + to_string(id) + "')");
  } catch (const pqxx::unique_violation&) {
    from_sql = true;
  }
  CAF_CHECK(from_sql);
  CAF_CHECK_EQUAL(live(), 0);
  CAF_CHECK_EQUAL(finished(), 1);
}

CAF_TEST(retention drops whole days and leaves the others) {
  // Two past days with partitions of their own, and one without.
  auto exec = [&](const std::string& sql) {
    pqxx::nontransaction{*conn}.exec0(sql);
  };
  for (std::string day : {"2020-01-01", "2020-01-02"})
    exec("CREATE TABLE cafmq.tasks_history_" + day.substr(0, 4)
         + day.substr(5, 2) + day.substr(8, 2)
         + " PARTITION OF cafmq.tasks_history FOR VALUES FROM ('" + day
         + " 00:00+00') TO ('" + day + " 00:00+00'::timestamptz + "
         + "interval '1 day')");
  std::vector<spawn_builder> xs(30, spawn_builder{"t"});
  spawn_or_throw(*conn, xs);
  {
    pqxx::work w{*conn};
    finish_by_hand(w, "true", "completed");
    w.commit();
  }
  exec("WITH x AS (SELECT id, row_number() OVER (ORDER BY id) n FROM "
       "cafmq.tasks_history) UPDATE cafmq.tasks_history h SET "
       "finished_at = CASE WHEN x.n <= 10 THEN '2020-01-01 12:00+00' WHEN "
       "x.n <= 20 THEN '2020-01-02 12:00+00' ELSE '2019-06-01 12:00+00' "
       "END::timestamptz FROM x WHERE x.id = h.id");
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM "
                                   "cafmq.tasks_history_default"),
                  10);
  // A retention that ends in the middle of the second day: the first day
  // goes whole, the second stays, and so do the older rows without a day
  // of their own (default partition), which go by DELETE.
  auto retention = query_value<std::int64_t>(
    "SELECT (extract(epoch FROM now() - '2020-01-02 12:00+00') * 1e6)::bigint");
  auto removed = prune(*conn, std::chrono::microseconds{retention}, 1000);
  CAF_REQUIRE(removed);
  CAF_CHECK_EQUAL(*removed, 20);
  CAF_CHECK(query_value<bool>("SELECT to_regclass('cafmq.tasks_history_"
                              "20200101') IS NULL"));
  CAF_CHECK(query_value<bool>("SELECT to_regclass('cafmq.tasks_history_"
                              "20200102') IS NOT NULL"));
  CAF_CHECK_EQUAL(finished(), 10);
  // No row of the kept day was deleted.
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM "
                                   "cafmq.tasks_history_20200102"),
                  10);
}

CAF_TEST(the finished totals are counted as tasks move in and out) {
  auto exec = [&](const std::string& sql) {
    pqxx::nontransaction{*conn}.exec0(sql);
  };
  auto spawn_in = [&](const char* name, const char* channel) {
    return spawn_builder{name}.channel_name(channel).spawn(*conn)->id;
  };
  auto q = poller();
  // Every ending: completed, failed for good, cancelled while pending,
  // ended by its claim (deadline passed).
  std::vector<uuid> failed;
  for (int i = 0; i < 3; ++i) {
    spawn_in("ok", "a");
    spawn_in("ok", "b");
    failed.push_back(spawn_in("bad", "a"));
  }
  auto dropped
    = spawn_builder{"later"}.channel_name("b").delay(1h).spawn(*conn);
  auto late = spawn_builder{"late"}.channel_name("a").delay(1h).spawn(*conn);
  auto ok = claim_or_throw(*q, request({"ok"}, 10));
  CAF_REQUIRE_EQUAL(ok.tasks.size(), 6u);
  std::vector<attempt_ref> refs;
  for (auto& t : ok.tasks)
    refs.push_back({t.id, t.attempt});
  CAF_REQUIRE(q->complete(refs));
  auto bad = claim_or_throw(*q, request({"bad"}, 10));
  std::vector<attempt_failure> failures;
  for (auto& t : bad.tasks)
    failures.emplace_back(attempt_ref{t.id, t.attempt}, "boom", false);
  CAF_REQUIRE(q->fail(failures));
  CAF_CHECK_EQUAL(to_string(*cancel(*conn, dropped->id)), "cancelled");
  exec("UPDATE cafmq.tasks_live SET run_at = now(), deadline = now() WHERE "
       "id = '"
       + to_string(late->id) + "'");
  CAF_CHECK_EQUAL(claim_or_throw(*q, request({"late"}, 1)).ended.size(), 1u);
  auto [counted, held] = counts();
  CAF_CHECK_EQUAL(counted, held);
  CAF_CHECK_EQUAL(finished(), 11);
  // Out again: a retry by hand, a clear of a channel.
  CAF_REQUIRE(retry(*conn, {failed[0]}));
  CAF_CHECK_EQUAL(finished(), 10);
  std::tie(counted, held) = counts();
  CAF_CHECK_EQUAL(counted, held);
  CAF_REQUIRE(clear(*conn, std::vector<std::string>{"b"}));
  std::tie(counted, held) = counts();
  CAF_CHECK_EQUAL(counted, held);
  // Rows moved by hand to other days (a cross-partition update): one to a
  // past day with a partition, one to a day without (the default).
  exec("CREATE TABLE cafmq.tasks_history_20200101 PARTITION OF "
       "cafmq.tasks_history FOR VALUES FROM ('2020-01-01 00:00+00') TO "
       "('2020-01-02 00:00+00')");
  exec("WITH x AS (SELECT id, row_number() OVER (ORDER BY id) n FROM "
       "cafmq.tasks_history) UPDATE cafmq.tasks_history h SET finished_at = "
       "CASE WHEN x.n <= 2 THEN '2020-01-01 12:00+00' ELSE '2019-06-01 "
       "12:00+00' END::timestamptz FROM x WHERE x.id = h.id AND x.n <= 3");
  std::tie(counted, held) = counts();
  CAF_CHECK_EQUAL(counted, held);
  // Retention past both: a dropped day and deleted rows of the default,
  // each subtracted; what prune says it removed is what they held.
  auto removed = prune(*conn, 24h, 1000);
  CAF_REQUIRE(removed);
  CAF_CHECK_EQUAL(*removed, 3);
  std::tie(counted, held) = counts();
  CAF_CHECK_EQUAL(counted, held);
  // Folded: one row per key.
  CAF_CHECK(query_value<bool>("SELECT count(*) = count(DISTINCT (day, "
                              "channel_name, state)) FROM "
                              "cafmq.finished_counts"));
  // The totals the dashboard and `cafmq stats` read.
  auto stats = queue_stats(*conn);
  CAF_REQUIRE(stats);
  std::int64_t completed = 0;
  for (auto& x : *stats)
    if (x.state == task_state::completed)
      completed += x.tasks;
  CAF_CHECK_EQUAL(completed,
                  query_value<std::int64_t>("SELECT count(*) FROM "
                                            "cafmq.tasks_history WHERE "
                                            "state = 'completed'"));
}

CAF_TEST(prune makes the next days and moves their waiting rows in) {
  // A database whose days ahead were not made (no maintenance for days).
  drop_days();
  CAF_REQUIRE_EQUAL(history_days(*conn), "");
  auto id = spawn_builder{"t"}.spawn(*conn)->id;
  {
    pqxx::work w{*conn};
    // Finished tomorrow (a clock ahead): no partition yet, so the default.
    finish_by_hand(w, "true", "completed",
                   "finished_at = now() + interval '1 day'");
    w.commit();
  }
  CAF_CHECK_EQUAL(partition_of(id), "cafmq.tasks_history_default");
  CAF_REQUIRE(prune(*conn, std::chrono::hours{24}));
  auto tomorrow = query_value<std::string>(
    "SELECT 'cafmq.tasks_history_' || to_char((now() AT TIME ZONE 'UTC')::date "
    "+ 1, 'YYYYMMDD')");
  CAF_CHECK_EQUAL(partition_of(id), tomorrow);
  // Analyzed with the row it got (-1: never analyzed).
  CAF_CHECK_EQUAL(query_value<double>("SELECT reltuples FROM pg_class WHERE "
                                      "oid = '"
                                      + tomorrow + "'::regclass"),
                  1.0);
  // Today and the two days ahead.
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM pg_inherits WHERE "
                                   "inhparent = "
                                   "'cafmq.tasks_history'::regclass"),
                  4);
  // A completion lands in today's.
  auto next = spawn_builder{"t"}.spawn(*conn)->id;
  auto q = poller();
  auto t = claim_one(*q, "t");
  CAF_REQUIRE_EQUAL(q->complete({{t.id, t.attempt}})->size(), 1u);
  CAF_CHECK_EQUAL(partition_of(next),
                  query_value<std::string>(
                    "SELECT 'cafmq.tasks_history_' || to_char(now() AT TIME "
                    "ZONE 'UTC', 'YYYYMMDD')"));
  // Once made, a second prune makes none.
  CAF_REQUIRE(prune(*conn, std::chrono::hours{24}));
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM pg_inherits WHERE "
                                   "inhparent = "
                                   "'cafmq.tasks_history'::regclass"),
                  4);
}

CAF_TEST(every attempt is kept with how it ended) {
  auto id = spawn_builder{"t"}.retries(4).backoff(1h).spawn(*conn)->id;
  auto q = poller();
  // 1 fails and is retried, 2 loses its lease, 3 completes.
  auto t1 = claim_one(*q, "t");
  CAF_REQUIRE(q->fail({{{id, t1.attempt}, "first", true}}));
  auto retry_at = status(*conn, id)->run_at;
  age_task(*conn, id, 7200);
  auto t2 = claim_one(*q, "t");
  CAF_REQUIRE(inspect_task(*conn, id)->attempts.back().outcome == "running");
  age_task(*conn, id, 3600); // Its lease expires.
  auto lease_end = status(*conn, id)->run_at;
  auto t3 = claim_one(*q, "t");
  CAF_REQUIRE_EQUAL(t3.attempt, 3);
  CAF_REQUIRE_EQUAL(q->complete({{id, t3.attempt}})->size(), 1u);
  auto x = inspect_task(*conn, id);
  CAF_REQUIRE(x);
  auto& a = x->attempts;
  CAF_REQUIRE_EQUAL(a.size(), 3u);
  for (int i = 0; i < 3; ++i)
    CAF_CHECK_EQUAL(a[i].attempt, i + 1);
  CAF_CHECK_EQUAL(a[0].outcome, "failed");
  CAF_CHECK_EQUAL(a[0].error.value_or(""), "first");
  CAF_CHECK(a[0].retry_at == retry_at);
  CAF_CHECK(a[0].ended_at && *a[0].ended_at >= a[0].started_at);
  CAF_CHECK(a[0].node == x->status.node);
  CAF_CHECK_EQUAL(a[1].outcome, "lost");
  CAF_CHECK_EQUAL(a[1].error.value_or(""), "lease expired");
  CAF_CHECK(a[1].ended_at == lease_end);
  CAF_CHECK(!a[1].retry_at);
  CAF_CHECK_EQUAL(a[2].outcome, "completed");
  CAF_CHECK(a[2].started_at == x->status.started_at);
  CAF_CHECK(a[2].ended_at == x->status.finished_at);
  CAF_CHECK(!a[2].error);
  CAF_CHECK(a[0].started_at < a[1].started_at
            && a[1].started_at < a[2].started_at);
  // A task done at its first attempt writes nothing more.
  auto once = spawn_builder{"once"}.spawn(*conn)->id;
  auto o = claim_one(*q, "once");
  CAF_REQUIRE_EQUAL(q->complete({{once, o.attempt}})->size(), 1u);
  CAF_CHECK(query_value<bool>("SELECT earlier_attempts IS NULL FROM "
                              "cafmq.tasks_history WHERE id = '"
                              + to_string(once) + "'"));
  CAF_CHECK_EQUAL(inspect_task(*conn, once)->attempts.size(), 1u);
  // Never started: no attempt.
  auto idle = spawn_builder{"idle"}.delay(1h).spawn(*conn)->id;
  CAF_CHECK(inspect_task(*conn, idle)->attempts.empty());
}

CAF_TEST(a retry by hand keeps the attempt the task ended with once) {
  // Failed for good, retried by hand, then completed.
  auto id = spawn_builder{"t"}.spawn(*conn)->id;
  auto q = poller();
  auto t1 = claim_one(*q, "t");
  CAF_REQUIRE(q->fail({{{id, t1.attempt}, "boom", false, "w9"}}));
  CAF_REQUIRE(retry(*conn, {id}));
  // Live again: the worker is the entry's, not the row's.
  CAF_CHECK(query_value<bool>("SELECT worker IS NULL FROM cafmq.tasks_live "
                              "WHERE id = '"
                              + to_string(id) + "'"));
  auto t2 = claim_one(*q, "t");
  CAF_REQUIRE_EQUAL(q->complete({{id, t2.attempt}})->size(), 1u);
  auto a = inspect_task(*conn, id)->attempts;
  CAF_REQUIRE_EQUAL(a.size(), 2u);
  CAF_CHECK_EQUAL(a[0].outcome, "failed");
  CAF_CHECK_EQUAL(a[0].error.value_or(""), "boom");
  CAF_CHECK_EQUAL(a[0].worker.value_or(""), "w9");
  CAF_CHECK(a[0].retry_at.has_value());
  CAF_CHECK_EQUAL(a[1].outcome, "completed");
  // Cancelled while it waited for its retry: the failure is in the list
  // already, and neither the cancel nor a retry by hand adds it again.
  auto w = spawn_builder{"w"}.retries(3).backoff(1h).spawn(*conn)->id;
  auto w1 = claim_one(*q, "w");
  CAF_REQUIRE(q->fail({{{w, w1.attempt}, "later", true}}));
  CAF_REQUIRE_EQUAL(to_string(*cancel(*conn, w)), "cancelled");
  CAF_CHECK_EQUAL(inspect_task(*conn, w)->attempts.size(), 1u);
  CAF_REQUIRE(retry(*conn, {w}));
  auto b = inspect_task(*conn, w)->attempts;
  CAF_REQUIRE_EQUAL(b.size(), 1u);
  CAF_CHECK_EQUAL(b[0].outcome, "failed");
  CAF_CHECK_EQUAL(b[0].error.value_or(""), "later");
}

CAF_TEST(the worker that ran an attempt is kept with it) {
  auto id = spawn_builder{"t"}.retries(2).backoff(1h).spawn(*conn)->id;
  auto q = poller();
  auto t1 = claim_one(*q, "t");
  CAF_REQUIRE(
    q->fail({attempt_failure{{id, t1.attempt}, "first", true, "w1"}}));
  age_task(*conn, id, 7200);
  auto t2 = claim_one(*q, "t");
  CAF_REQUIRE_EQUAL(q->complete({{id, t2.attempt}}, {}, {"w2"})->size(), 1u);
  auto a = inspect_task(*conn, id)->attempts;
  CAF_REQUIRE_EQUAL(a.size(), 2u);
  CAF_CHECK_EQUAL(a[0].worker.value_or(""), "w1");
  CAF_CHECK_EQUAL(a[1].worker.value_or(""), "w2");
  CAF_CHECK_EQUAL(query_value<std::string>(
                    "SELECT worker FROM cafmq.tasks_history WHERE id = '"
                    + to_string(id) + "'"),
                  "w2");
  // A batch where one attempt ran on a worker and one on the runner; a
  // failure for good on a worker.
  auto on_runner = spawn_builder{"r"}.spawn(*conn)->id;
  auto on_worker = spawn_builder{"r"}.spawn(*conn)->id;
  auto failing = spawn_builder{"f"}.spawn(*conn)->id;
  auto batch = claim_or_throw(*q, request({"r"}, 2)).tasks;
  CAF_REQUIRE_EQUAL(batch.size(), 2u);
  std::vector<attempt_ref> refs;
  std::vector<std::string> workers;
  for (auto& t : batch) {
    refs.push_back({t.id, t.attempt});
    workers.push_back(t.id == on_worker ? "w3" : "");
  }
  CAF_REQUIRE_EQUAL(q->complete(refs, {}, workers)->size(), 2u);
  auto f = claim_one(*q, "f");
  CAF_REQUIRE(
    q->fail({attempt_failure{{failing, f.attempt}, "no", false, "w4"}}));
  CAF_CHECK(!inspect_task(*conn, on_runner)->attempts.at(0).worker);
  CAF_CHECK_EQUAL(
    inspect_task(*conn, on_worker)->attempts.at(0).worker.value_or(""), "w3");
  auto fa = inspect_task(*conn, failing)->attempts;
  CAF_REQUIRE_EQUAL(fa.size(), 1u);
  CAF_CHECK_EQUAL(fa[0].outcome, "failed");
  CAF_CHECK_EQUAL(fa[0].worker.value_or(""), "w4");
}

CAF_TEST(a completion in the handler transaction names its worker) {
  struct worker_backend : task_backend {
    caf::error complete(const attempt_ref&, const std::string&) override {
      return caf::none;
    }
    caf::error checkpoint(const attempt_ref&,
                          const cafmq::checkpoint&) override {
      return caf::none;
    }
    caf::error keep_alive(const attempt_ref&,
                          std::chrono::microseconds) override {
      return caf::none;
    }
    std::string worker() const override {
      return "w5";
    }
  };
  auto id = spawn_builder{"t"}.spawn(*conn)->id;
  auto q = poller();
  current_task task{claim_one(*q, "t"), std::make_shared<worker_backend>()};
  auto other = connect();
  pqxx::work tx{*other};
  CAF_REQUIRE(!task.complete(tx));
  auto a = inspect_task(*conn, id)->attempts;
  CAF_REQUIRE_EQUAL(a.size(), 1u);
  CAF_CHECK_EQUAL(a[0].outcome, "completed");
  CAF_CHECK_EQUAL(a[0].worker.value_or(""), "w5");
}

CAF_TEST_FIXTURE_SCOPE_END()
