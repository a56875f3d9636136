// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE queue_chain
#include <caf/test/unit_test.hpp>

#include <set>

#include "cafmq/current_task.hpp"
#include "support/db_fixture.hpp"
#include "support/queue_helpers.hpp"

using namespace cafmq;
using namespace cafmq::test;

CAF_TEST_FIXTURE_SCOPE(queue_chain_tests, db_fixture)

CAF_TEST(a spawned task is claimed run and completed) {
  auto spawned = spawn_builder{"greet"}
                   .channel_name("foo")
                   .json(std::string{"John"})
                   .spawn(*conn);
  CAF_REQUIRE(spawned);
  CAF_CHECK(spawned->created);
  CAF_CHECK_EQUAL(state_of(*conn, spawned->id), "pending");
  auto q = poller();
  auto batch = claim_or_throw(*q, request({"greet"}));
  CAF_REQUIRE_EQUAL(batch.tasks.size(), 1u);
  current_task task{batch.tasks[0], q};
  CAF_CHECK(task.id() == spawned->id);
  CAF_CHECK_EQUAL(task.attempt(), 1);
  auto who = task.json<std::string>();
  CAF_REQUIRE(who);
  CAF_CHECK_EQUAL(*who, "John");
  CAF_CHECK_EQUAL(state_of(*conn, spawned->id), "running");
  CAF_CHECK(!task.complete());
  CAF_CHECK(task.completed());
  auto st = status(*conn, spawned->id);
  CAF_REQUIRE(st);
  CAF_CHECK_EQUAL(to_string(st->state), "completed");
  CAF_CHECK(st->finished_at.has_value());
  CAF_CHECK(st->node == std::string{"test"});
  auto found = exists(*conn, spawned->id);
  CAF_CHECK(found && *found);
  CAF_CHECK(claim_or_throw(*q, request({"greet"})).tasks.empty());
}

CAF_TEST(payloads round - trip and mismatches are clear errors) {
  std::string bytes{"\x00\x01\xff\x7f", 4};
  auto id = spawn_builder{"p"}
              .raw_json(R"({"n": 42, "s": "x\"y"})")
              .bytes(bytes)
              .spawn(*conn)
              ->id;
  auto q = poller();
  auto batch = claim_or_throw(*q, request({"p"}));
  CAF_REQUIRE_EQUAL(batch.tasks.size(), 1u);
  current_task task{batch.tasks[0], q};
  CAF_CHECK(task.id() == id);
  CAF_CHECK(task.bytes() == bytes);
  auto obj = task.json<nlohmann::json>();
  CAF_REQUIRE(obj);
  CAF_CHECK((*obj)["n"] == 42);
  CAF_CHECK((*obj)["s"] == "x\"y");
  auto wrong = task.json<std::vector<int>>();
  CAF_REQUIRE(!wrong);
  CAF_CHECK_EQUAL(code_of(wrong.error()), errc::payload_mismatch);
}

CAF_TEST(names with quotes semicolons and unicode are stored verbatim) {
  std::string name = "it's; DROP TABLE cafmq.tasks; -- \"quoted\" \\ ünï 🚀";
  std::string channel = "chan'nel; --";
  std::string args = "{\"a\": \"b\"}, 'c'";
  auto id = spawn_builder{name}
              .channel_name(channel)
              .channel_args(args)
              .spawn(*conn)
              ->id;
  auto st = status(*conn, id);
  CAF_REQUIRE(st);
  CAF_CHECK_EQUAL(st->name, name);
  CAF_CHECK_EQUAL(st->channel_name, channel);
  CAF_CHECK_EQUAL(st->channel_args, args);
  auto q = poller();
  auto batch = claim_or_throw(*q, request({name}));
  CAF_REQUIRE_EQUAL(batch.tasks.size(), 1u);
  CAF_CHECK_EQUAL(batch.tasks[0].name, name);
  CAF_CHECK_EQUAL(batch.tasks[0].channel_args, args);
}

CAF_TEST(bad input is refused and nothing is inserted) {
  auto count = [&] {
    return query_value<int>("SELECT count(*) FROM cafmq.tasks");
  };
  auto old_limit = payload_limit();
  payload_limit(1000);
  std::vector<std::pair<spawn_builder, errc>> cases{
    {spawn_builder{"x"}.raw_json("{not json"), errc::invalid_json},
    {spawn_builder{"x"}.raw_json(R"("\u0000")"), errc::invalid_json},
    {spawn_builder{"x"}.bytes(std::string(1001, 'b')), errc::payload_too_large},
    {spawn_builder{""}, errc::invalid_name},
    {spawn_builder{std::string(300, 'n')}, errc::invalid_name},
    {spawn_builder{std::string("a\0b", 3)}, errc::invalid_name},
    {spawn_builder{"x"}.channel_name(std::string("c\0", 2)),
     errc::invalid_name},
  };
  for (auto& [builder, expected] : cases) {
    auto result = builder.spawn(*conn);
    CAF_REQUIRE(!result);
    CAF_CHECK_EQUAL(code_of(result.error()), expected);
    CAF_MESSAGE(render(result.error()));
  }
  // One bad task in a batch refuses the whole batch.
  std::vector<spawn_builder> batch{spawn_builder{"ok"},
                                   spawn_builder{"x"}.raw_json("[1,")};
  CAF_CHECK_EQUAL(code_of(spawn_many(*conn, batch).error()),
                  errc::invalid_json);
  payload_limit(old_limit);
  CAF_CHECK_EQUAL(count(), 0);
}

CAF_TEST(a caller supplied id that exists is a distinct error) {
  auto id = uuid::random();
  CAF_REQUIRE(spawn_builder{"x"}.id(id).spawn(*conn));
  auto again = spawn_builder{"x"}.id(id).spawn(*conn);
  CAF_REQUIRE(!again);
  CAF_CHECK_EQUAL(code_of(again.error()), errc::duplicate_id);
  // One line that names the task, not the server's error and its context.
  CAF_CHECK_EQUAL(render(again.error()), "cafmq::duplicate_id: task "
                                           + to_string(id) + " already exists");
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.tasks"), 1);
}

CAF_TEST(copies of one builder spawn distinct tasks) {
  auto builder = spawn_builder{"x"}.channel_name("copies").json(7);
  auto result = spawn_many(*conn, std::vector<spawn_builder>(9, builder));
  CAF_REQUIRE(result);
  std::set<uuid> ids;
  for (auto& x : *result)
    ids.insert(x.id);
  CAF_CHECK_EQUAL(ids.size(), 9u);
  // One builder spawned twice is two tasks.
  CAF_REQUIRE(builder.spawn(*conn));
  CAF_REQUIRE(builder.spawn(*conn));
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.tasks"), 11);
}

CAF_TEST(a live unique key refuses a second task without an error) {
  auto first = spawn_builder{"x"}.unique_key("report-7").spawn(*conn);
  CAF_REQUIRE(first && first->created);
  auto second = spawn_builder{"x"}.unique_key("report-7").spawn(*conn);
  CAF_REQUIRE(second);
  CAF_CHECK(!second->created);
  CAF_CHECK(second->id == first->id);
  // Within one batch too.
  auto batch = spawn_or_throw(*conn, {spawn_builder{"x"}.unique_key("k2"),
                                      spawn_builder{"x"}.unique_key("k2")});
  CAF_CHECK(batch[0].created);
  CAF_CHECK(!batch[1].created);
  CAF_CHECK(batch[1].id == batch[0].id);
  // Once the first finishes, the key is free again.
  auto q = poller();
  for (auto& t : claim_or_throw(*q, request({"x"})).tasks)
    CAF_CHECK(!q->complete(attempt_ref{t.id, t.attempt}));
  auto third = spawn_builder{"x"}.unique_key("report-7").spawn(*conn);
  CAF_REQUIRE(third);
  CAF_CHECK(third->created);
}

CAF_TEST(transactional spawn rolls back with the caller) {
  auto listener = connect();
  pqxx::nontransaction{*listener}.exec0("LISTEN cafmq_ready");
  uuid id;
  {
    pqxx::work tx{*conn};
    auto result = spawn_builder{"x"}.channel_name("rb").spawn(tx);
    CAF_REQUIRE(result);
    id = result->id;
    // No commit: the transaction rolls back here.
  }
  auto found = exists(*conn, id);
  CAF_CHECK(found && !*found);
  pqxx::nontransaction{*conn}.exec("SELECT 1");
  CAF_CHECK_EQUAL(listener->get_notifs(), 0);
  {
    pqxx::work tx{*conn};
    CAF_REQUIRE(spawn_builder{"x"}.channel_name("rb").spawn(tx));
    tx.commit();
  }
  CAF_CHECK_EQUAL(listener->await_notification(5, 0), 1);
}

CAF_TEST(batch spawn keeps array order and returns ids in order) {
  std::vector<spawn_builder> xs;
  for (int i = 0; i < 100; ++i)
    xs.push_back(spawn_builder{"b"}.channel_name("batch").json(i));
  auto result = spawn_or_throw(*conn, xs);
  CAF_REQUIRE_EQUAL(result.size(), 100u);
  std::set<uuid> ids;
  for (auto& x : result)
    ids.insert(x.id);
  CAF_CHECK_EQUAL(ids.size(), 100u);
  pqxx::nontransaction tx{*conn};
  auto rows = tx.exec("SELECT payload_json::text FROM cafmq.tasks "
                      "ORDER BY seq");
  for (int i = 0; i < 100; ++i)
    CAF_CHECK_EQUAL(rows[i][0].as<std::string>(), std::to_string(i));
}

CAF_TEST(delay and run at follow the database clock) {
  auto delayed = spawn_builder{"d"}.delay(std::chrono::hours{1}).spawn(*conn);
  auto ready
    = spawn_builder{"d"}
        .run_at(std::chrono::system_clock::now() - std::chrono::hours{1})
        .spawn(*conn);
  auto later
    = spawn_builder{"d"}
        .run_at(std::chrono::system_clock::now() + std::chrono::hours{2})
        .spawn(*conn);
  CAF_REQUIRE(delayed && ready && later);
  // The delay counts from the database's now(), not the client's clock.
  auto offset = query_value<double>(
    "SELECT extract(epoch FROM run_at - created_at) FROM cafmq.tasks WHERE id "
    "= '"
    + to_string(delayed->id) + "'");
  CAF_CHECK_EQUAL(offset, 3600.0);
  auto q = poller();
  auto batch = claim_or_throw(*q, request({"d"}));
  CAF_REQUIRE_EQUAL(batch.tasks.size(), 1u);
  CAF_CHECK(batch.tasks[0].id == ready->id);
  CAF_REQUIRE(q->complete({{ready->id, 1}}));
  // The claim tells how long until the next one becomes runnable.
  batch = claim_or_throw(*q, request({"d"}));
  CAF_CHECK(batch.tasks.empty());
  CAF_REQUIRE(batch.wait.has_value());
  CAF_CHECK_GREATER(batch.wait->count(), 3590LL * 1000000);
  CAF_CHECK_LESS(batch.wait->count(), 3601LL * 1000000);
  age_task(*conn, delayed->id, 3600);
  batch = claim_or_throw(*q, request({"d"}));
  CAF_REQUIRE_EQUAL(batch.tasks.size(), 1u);
  CAF_CHECK(batch.tasks[0].id == delayed->id);
}

CAF_TEST(unknown task names are never claimed) {
  spawn_or_throw(*conn, {spawn_builder{"mine"}, spawn_builder{"theirs"},
                         spawn_builder{"theirs"}.ordered()});
  auto q = poller();
  auto batch = claim_or_throw(*q, request({"mine"}));
  CAF_REQUIRE_EQUAL(batch.tasks.size(), 1u);
  CAF_CHECK_EQUAL(batch.tasks[0].name, "mine");
  CAF_CHECK(claim_or_throw(*q, request({"mine"})).tasks.empty());
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.tasks WHERE "
                                   "name = 'theirs' AND state = 'pending' AND "
                                   "attempt = 0"),
                  2);
}

CAF_TEST(clear removes channels and clear all removes everything) {
  spawn_or_throw(*conn,
                 {spawn_builder{"x"}.channel_name("foo"),
                  spawn_builder{"x"}.channel_name("foo").channel_args("1"),
                  spawn_builder{"x"}.channel_name("bar"),
                  spawn_builder{"x"}.channel_name("baz")});
  auto cleared = clear(*conn, {"foo", "baz"});
  CAF_REQUIRE(cleared);
  CAF_CHECK_EQUAL(*cleared, 3);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.tasks"), 1);
  auto all = clear_all(*conn);
  CAF_REQUIRE(all);
  CAF_CHECK_EQUAL(*all, 1);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.tasks"), 0);
}

CAF_TEST(status of an unknown id is a clear error) {
  auto st = status(*conn, uuid::random());
  CAF_REQUIRE(!st);
  CAF_CHECK_EQUAL(code_of(st.error()), errc::unknown_task);
  auto found = exists(*conn, uuid::random());
  CAF_CHECK(found && !*found);
}

CAF_TEST_FIXTURE_SCOPE_END()
