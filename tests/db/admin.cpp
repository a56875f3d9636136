// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE admin
#include <caf/test/unit_test.hpp>

#include <algorithm>
#include <map>
#include <string>

#include "cafmq/admin.hpp"
#include "cafmq/migrate.hpp"
#include "cafmq/sql.hpp"
#include "support/db_fixture.hpp"
#include "support/queue_helpers.hpp"

using namespace cafmq;
using namespace cafmq::test;
using namespace std::chrono_literals;

namespace {

// Claims `id` (named "t") and fails its attempt for good.
void fail_for_good(queue_connection& q, const uuid& id,
                   const std::string& error = "boom") {
  auto batch = claim_or_throw(q, request({"t"}, 1000));
  auto i = std::find_if(batch.tasks.begin(), batch.tasks.end(),
                        [&](const claimed_task& t) { return t.id == id; });
  if (i == batch.tasks.end())
    throw std::runtime_error("task not claimed");
  if (!q.fail({{{id, i->attempt}, error, false}}))
    throw std::runtime_error("fail did not record");
  // Hand back the others unchanged.
  std::vector<attempt_ref> others;
  for (const auto& t : batch.tasks)
    if (t.id != id)
      others.push_back({t.id, t.attempt});
  if (!others.empty() && !q.release(others))
    throw std::runtime_error("release failed");
}

const queue_stat* find_stat(const std::vector<queue_stat>& xs,
                            const std::string& channel, task_state state) {
  for (const auto& x : xs)
    if (x.channel_name == channel && x.state == state)
      return &x;
  return nullptr;
}

std::vector<uuid> ids_of(const task_page& page) {
  std::vector<uuid> result;
  for (const auto& row : page.tasks)
    result.push_back(row.id);
  return result;
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(admin_tests, db_fixture)

CAF_TEST(a listing pages newest first and follows its cursor to the end) {
  std::vector<uuid> ids;
  for (int i = 0; i < 5; ++i)
    ids.push_back(spawn_builder{"t"}.spawn(*conn)->id);
  auto first = list_tasks(*conn, task_filter{}, 2);
  CAF_REQUIRE(first);
  CAF_CHECK(ids_of(*first) == (std::vector<uuid>{ids[4], ids[3]}));
  CAF_REQUIRE(first->next);
  auto second = list_tasks(*conn, task_filter{}, 2, first->next);
  CAF_REQUIRE(second);
  CAF_CHECK(ids_of(*second) == (std::vector<uuid>{ids[2], ids[1]}));
  auto last = list_tasks(*conn, task_filter{}, 2, second->next);
  CAF_REQUIRE(last);
  CAF_CHECK(ids_of(*last) == (std::vector<uuid>{ids[0]}));
  CAF_CHECK(!last->next);
  CAF_CHECK_EQUAL(last->tasks[0].status.name, "t");
  CAF_CHECK(!list_tasks(*conn, task_filter{}, 0));
  CAF_CHECK(!list_tasks(*conn, task_filter{}, 1001));
}

CAF_TEST(a listing filters by state name channel and age) {
  auto a = spawn_builder{"t"}.channel_name("mail").spawn(*conn)->id;
  auto b = spawn_builder{"u"}.channel_name("mail").spawn(*conn)->id;
  auto c = spawn_builder{"t"}.channel_name("sms").spawn(*conn)->id;
  auto q = poller();
  fail_for_good(*q, c);
  // `a` was created an hour ago.
  pqxx::work tx{*conn};
  tx.exec_params0("UPDATE cafmq.tasks_live SET created_at = now() - interval "
                  "'1 hour' WHERE id = $1::uuid",
                  to_string(a));
  tx.commit();
  auto list = [&](task_filter f) {
    return ids_of(list_tasks(*conn, f).value());
  };
  task_filter by_state;
  by_state.states = {task_state::failed};
  CAF_CHECK(list(by_state) == std::vector<uuid>{c});
  by_state.states = {task_state::failed, task_state::pending};
  CAF_CHECK(list(by_state) == (std::vector<uuid>{c, b, a}));
  task_filter by_name;
  by_name.name = "u";
  CAF_CHECK(list(by_name) == std::vector<uuid>{b});
  task_filter by_channel;
  by_channel.channel_name = "mail";
  by_channel.name = "t";
  CAF_CHECK(list(by_channel) == std::vector<uuid>{a});
  task_filter old;
  old.older_than = std::chrono::minutes{30};
  CAF_CHECK(list(old) == std::vector<uuid>{a});
  task_filter recent;
  recent.newer_than = std::chrono::minutes{30};
  CAF_CHECK(list(recent) == (std::vector<uuid>{c, b}));
}

CAF_TEST(inspecting a task shows its payload and options) {
  auto id = spawn_builder{"t"}
              .raw_json(R"({"to": "ann"})")
              .unique_key("k1")
              .timeout(5s)
              .spawn(*conn)
              ->id;
  auto x = inspect_task(*conn, id);
  CAF_REQUIRE(x);
  CAF_CHECK(x->id == id);
  CAF_CHECK_EQUAL(x->status.name, "t");
  CAF_CHECK_EQUAL(x->payload_json.value_or(""), R"({"to": "ann"})");
  CAF_CHECK(!x->payload_bytes);
  CAF_CHECK_EQUAL(x->unique_key.value_or(""), "k1");
  CAF_CHECK(x->timeout == std::chrono::microseconds{5s});
  CAF_CHECK(!x->ordered);
  auto none = inspect_task(*conn, uuid::random());
  CAF_REQUIRE(!none);
  CAF_CHECK(none.error() == errc::unknown_task);
}

CAF_TEST(stats count each channel and state with the oldest pending age) {
  auto now_ready = spawn_builder{"t"}.channel_name("mail").spawn(*conn)->id;
  spawn_builder{"t"}.channel_name("mail").delay(1h).spawn(*conn);
  auto failed = spawn_builder{"t"}.channel_name("sms").spawn(*conn)->id;
  auto q = poller();
  fail_for_good(*q, failed);
  age_task(*conn, now_ready, 90);
  auto stats = queue_stats(*conn);
  CAF_REQUIRE(stats);
  auto pending = find_stat(*stats, "mail", task_state::pending);
  CAF_REQUIRE(pending != nullptr);
  CAF_CHECK_EQUAL(pending->tasks, 2);
  CAF_CHECK_EQUAL(pending->ready, 1);
  CAF_REQUIRE(pending->oldest_pending_age);
  CAF_CHECK_GREATER_OR_EQUAL(*pending->oldest_pending_age, 90s);
  CAF_CHECK_LESS(*pending->oldest_pending_age, 1h);
  auto done = find_stat(*stats, "sms", task_state::failed);
  CAF_REQUIRE(done != nullptr);
  CAF_CHECK_EQUAL(done->tasks, 1);
  CAF_CHECK_EQUAL(done->last_minute, 1);
  CAF_CHECK(find_stat(*stats, "sms", task_state::pending) == nullptr);
  // Without the finished totals the throughput is still there.
  auto live = queue_stats(*conn, false);
  CAF_REQUIRE(live);
  auto cheap = find_stat(*live, "sms", task_state::failed);
  CAF_REQUIRE(cheap != nullptr);
  CAF_CHECK_EQUAL(cheap->tasks, 0);
  CAF_CHECK_EQUAL(cheap->last_minute, 1);
  CAF_CHECK_EQUAL(find_stat(*live, "mail", task_state::pending)->tasks, 2);
}

CAF_TEST(the live counts read only live tasks however many finished) {
  insert_backlog(*conn, "done", 3000);
  pqxx::work tx{*conn};
  finish_by_hand(tx, "channel_name = 'done'", "completed",
                 "finished_at = now() - interval '1 hour'");
  tx.commit();
  insert_backlog(*conn, "live", 10);
  pqxx::nontransaction{*conn}.exec0(
    "VACUUM ANALYZE cafmq.tasks_live, cafmq.tasks_history");
  auto rows = tasks_read(*conn, [](pqxx::transaction_base& tx) {
    tx.exec("SELECT * FROM cafmq.queue_depth");
    tx.exec("SELECT * FROM cafmq.queue_throughput");
  });
  CAF_CHECK_LESS(rows, 100);
  auto stats = queue_stats(*conn, false);
  CAF_REQUIRE(stats);
  CAF_CHECK_EQUAL(find_stat(*stats, "live", task_state::pending)->tasks, 10);
  auto all = queue_stats(*conn, true);
  CAF_REQUIRE(all);
  CAF_CHECK_EQUAL(find_stat(*all, "done", task_state::completed)->tasks, 3000);
}

CAF_TEST(a retried task is pending with a fresh budget and its history) {
  auto id = spawn_builder{"t"}.retries(1).spawn(*conn)->id;
  auto q = poller();
  // Two attempts fail: the budget of two is spent.
  auto t1 = claim_or_throw(*q, request({"t"})).tasks.at(0);
  CAF_REQUIRE(q->fail({{{id, t1.attempt}, "first", true}}));
  age_task(*conn, id, 3600);
  auto t2 = claim_or_throw(*q, request({"t"})).tasks.at(0);
  CAF_REQUIRE(q->fail({{{id, t2.attempt}, "second", true}}));
  CAF_REQUIRE_EQUAL(state_of(*conn, id), "failed");
  auto r = retry(*conn, {id});
  CAF_REQUIRE(r);
  CAF_CHECK(r->retried == std::vector<uuid>{id});
  CAF_CHECK(r->skipped.empty());
  auto st = status(*conn, id);
  CAF_CHECK_EQUAL(to_string(st->state), "pending");
  CAF_CHECK_EQUAL(st->attempt, 2);
  CAF_CHECK_EQUAL(st->max_attempts, 4);
  CAF_CHECK_EQUAL(st->last_error.value_or(""), "second");
  CAF_CHECK(!st->finished_at);
  // It runs again at once; the attempt number goes on, so the old attempt
  // is fenced out.
  auto t3 = claim_or_throw(*q, request({"t"})).tasks.at(0);
  CAF_CHECK_EQUAL(t3.attempt, 3);
  CAF_CHECK(
    q->complete(std::vector<attempt_ref>{{id, t2.attempt}}).value().empty());
  CAF_CHECK_EQUAL(state_of(*conn, id), "running");
  // Two more failures spend the fresh budget of two; a second retry gives
  // two again, not four.
  CAF_REQUIRE(q->fail({{{id, t3.attempt}, "third", true}}));
  age_task(*conn, id, 3600);
  auto t4 = claim_or_throw(*q, request({"t"})).tasks.at(0);
  CAF_REQUIRE(q->fail({{{id, t4.attempt}, "fourth", true}}));
  CAF_REQUIRE_EQUAL(state_of(*conn, id), "failed");
  CAF_REQUIRE(retry(*conn, {id}));
  auto again = status(*conn, id);
  CAF_REQUIRE(again);
  CAF_CHECK_EQUAL(again->max_attempts, 6);
}

CAF_TEST(retry leaves live unknown and key holding tasks alone) {
  auto pending = spawn_builder{"t"}.spawn(*conn)->id;
  auto cancelled = spawn_builder{"t"}.unique_key("k").spawn(*conn)->id;
  CAF_REQUIRE(cancel(*conn, cancelled));
  auto holder = spawn_builder{"t"}.unique_key("k").spawn(*conn)->id;
  CAF_REQUIRE(holder != cancelled);
  auto unknown = uuid::random();
  auto r = retry(*conn, {pending, cancelled, unknown});
  CAF_REQUIRE(r);
  CAF_CHECK(r->retried.empty());
  std::map<std::string, std::string> why;
  for (auto& [id, reason] : r->skipped)
    why[to_string(id)] = reason;
  CAF_CHECK_EQUAL(why[to_string(pending)], "pending");
  CAF_CHECK_EQUAL(why[to_string(cancelled)], "unique key held");
  CAF_CHECK_EQUAL(why[to_string(unknown)], "unknown");
  CAF_CHECK_EQUAL(state_of(*conn, cancelled), "cancelled");
  // Once the holder is gone, the retry goes through.
  CAF_REQUIRE(cancel(*conn, holder));
  CAF_CHECK(retry(*conn, {cancelled})->retried == std::vector<uuid>{cancelled});
  CAF_CHECK_EQUAL(state_of(*conn, cancelled), "pending");
}

CAF_TEST(bulk retry and cancel apply to the tasks a filter matches) {
  auto a = spawn_builder{"t"}.channel_name("mail").spawn(*conn)->id;
  auto b = spawn_builder{"t"}.channel_name("mail").spawn(*conn)->id;
  auto c = spawn_builder{"t"}.channel_name("sms").spawn(*conn)->id;
  auto d = spawn_builder{"u"}.channel_name("mail").spawn(*conn)->id;
  auto q = poller();
  fail_for_good(*q, a);
  fail_for_good(*q, c);
  task_filter mail;
  mail.channel_name = "mail";
  auto r = retry_matching(*conn, mail);
  CAF_REQUIRE(r);
  CAF_CHECK(r->retried == std::vector<uuid>{a});
  CAF_CHECK_EQUAL(state_of(*conn, c), "failed");
  // Claim b so that it runs: a bulk cancel asks it to stop and cancels the
  // others at once.
  auto claimed = claim_or_throw(*q, request({"t"}, 1));
  CAF_REQUIRE_EQUAL(claimed.tasks.size(), 1u);
  auto running = claimed.tasks[0].id;
  CAF_REQUIRE(running == a || running == b);
  auto counts = cancel_matching(*conn, mail);
  CAF_REQUIRE(counts);
  CAF_CHECK_EQUAL(counts->cancelled, 2); // d and a or b
  CAF_CHECK_EQUAL(counts->requested, 1);
  CAF_CHECK_EQUAL(state_of(*conn, d), "cancelled");
  CAF_CHECK_EQUAL(state_of(*conn, running), "running");
  CAF_CHECK_EQUAL(state_of(*conn, c), "failed");
  CAF_CHECK(!retry_matching(*conn, mail, 0));
}

CAF_TEST(migration status lists every migration as applied) {
  auto xs = migration_status(*conn);
  CAF_REQUIRE(xs);
  CAF_REQUIRE_EQUAL(static_cast<int>(xs->size()), latest_schema_version());
  for (const auto& x : *xs)
    CAF_CHECK(x.applied);
  CAF_CHECK_EQUAL(xs->at(9).version, 10);
  CAF_CHECK_EQUAL(xs->at(9).name, "operations");
}

CAF_TEST(tasks spawned from SQL get time ordered ids) {
  pqxx::work tx{*conn};
  auto x = tx.exec1("SELECT cafmq.spawn('t', NULL)::text")[0].as<std::string>();
  auto y = tx.exec1("SELECT cafmq.spawn('t', NULL)::text")[0].as<std::string>();
  tx.commit();
  CAF_CHECK_EQUAL(x.substr(14, 1), "7");
  // Their first 48 bits are the database clock in milliseconds.
  CAF_CHECK_LESS_OR_EQUAL(x.substr(0, 13), y.substr(0, 13));
  auto ms = pqxx::nontransaction{*conn}
              .exec1("SELECT lpad(to_hex(floor(extract(epoch FROM now()) * "
                     "1000)::bigint), 12, '0')")[0]
              .as<std::string>();
  CAF_CHECK_EQUAL(x.substr(0, 6), ms.substr(0, 6));
}

CAF_TEST(a listing page reads the id indexes however many tasks finished) {
  // 100,000 finished tasks: a page that sorted the table would show.
  pqxx::nontransaction tx{*conn};
  tx.exec0("INSERT INTO cafmq.tasks_history (id, seq, name, channel_name, "
           "channel_args, state, ordered, max_attempts, run_at, backoff, "
           "backoff_cap, finished_at) "
           "SELECT cafmq.time_ordered_uuid(), nextval('cafmq.task_seq'), 't', "
           "'', '', 'completed', false, 5, now(), '1 s', '1 h', now() "
           "FROM generate_series(1, 100000)");
  tx.exec0("ANALYZE cafmq.tasks_history");
  auto explain = [&](const std::optional<std::string>& after) {
    std::string plan;
    std::optional<std::string> none;
    std::optional<std::int64_t> no_age;
    for (const auto& row :
         tx.exec_params(std::string{"EXPLAIN "} + sql::list_tasks, none, none,
                        none, no_age, no_age, after, 51))
      plan += row[0].as<std::string>() + "\n";
    return plan;
  };
  auto middle
    = tx.exec1("SELECT id::text FROM cafmq.tasks ORDER BY id OFFSET 50000 "
               "LIMIT 1")[0]
        .as<std::string>();
  for (const auto& after : {std::optional<std::string>{}, {middle}}) {
    auto plan = explain(after);
    // Both tables in id order, merged: no sort of either.
    CAF_CHECK_NOT_EQUAL(plan.find("Index Scan Backward using tasks_pkey"),
                        std::string::npos);
    CAF_CHECK_NOT_EQUAL(plan.find("Merge Append"), std::string::npos);
    CAF_CHECK_NOT_EQUAL(plan.find("Index Scan Backward using tasks_history"),
                        std::string::npos);
    auto sorts = plan.find("Sort  (") != std::string::npos;
    CAF_CHECK(!sorts);
    CAF_CHECK_EQUAL(plan.find("Seq Scan"), std::string::npos);
    if (sorts)
      CAF_MESSAGE(plan);
  }
}

CAF_TEST_FIXTURE_SCOPE_END()
