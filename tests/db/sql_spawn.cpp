// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE sql_spawn
#include <caf/test/unit_test.hpp>

#include <string>

#include "support/db_fixture.hpp"
#include "support/queue_helpers.hpp"

using namespace cafmq;
using namespace cafmq::test;

namespace {

uuid spawn_sql(pqxx::connection_base& conn, const std::string& call) {
  pqxx::work tx{conn};
  auto id = uuid::parse(tx.exec1("SELECT " + call)[0].as<std::string>());
  tx.commit();
  if (!id)
    throw std::runtime_error("cafmq.spawn returned no uuid");
  return *id;
}

// The message of the error that `call` raises, or "" if it succeeds.
std::string error_of(pqxx::connection_base& conn, const std::string& call) {
  try {
    pqxx::work tx{conn};
    tx.exec("SELECT " + call);
    tx.commit();
  } catch (const pqxx::sql_error& e) {
    return e.what();
  }
  return "";
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(sql_spawn_tests, db_fixture)

CAF_TEST(a task spawned from SQL with a name and payload takes the defaults) {
  auto id = spawn_sql(*conn, "cafmq.spawn('greet', '\"Ann\"')");
  auto st = status(*conn, id);
  CAF_REQUIRE(st);
  CAF_CHECK_EQUAL(to_string(st->state), "pending");
  CAF_CHECK_EQUAL(st->name, "greet");
  CAF_CHECK_EQUAL(st->channel_name, "");
  CAF_CHECK_EQUAL(st->max_attempts, task_options{}.retries + 1);
  // A runner claims it with its payload, like a task spawned from C++.
  auto q = poller();
  auto batch = claim_or_throw(*q, request({"greet"}));
  CAF_REQUIRE_EQUAL(batch.tasks.size(), 1u);
  CAF_CHECK(batch.tasks[0].id == id);
  CAF_CHECK_EQUAL(batch.tasks[0].payload_json.value_or(""), "\"Ann\"");
  CAF_CHECK_EQUAL(batch.tasks[0].ordered, false);
}

CAF_TEST(named arguments set the channel and the options) {
  auto id = spawn_sql(*conn, "cafmq.spawn('ship', '{\"order\": 7}', "
                             "channel_name => 'orders', channel_args => 'c1', "
                             "ordered => true, max_attempts => 2, "
                             "timeout => '30 seconds', "
                             "run_at => now() + interval '1 hour')");
  auto st = status(*conn, id);
  CAF_REQUIRE(st);
  CAF_CHECK_EQUAL(st->channel_name, "orders");
  CAF_CHECK_EQUAL(st->channel_args, "c1");
  CAF_CHECK_EQUAL(st->max_attempts, 2);
  CAF_CHECK(st->run_at
            > std::chrono::system_clock::now() + std::chrono::minutes{59});
  CAF_CHECK_EQUAL(query_value<bool>("SELECT ordered FROM cafmq.tasks"), true);
  CAF_CHECK_EQUAL(
    query_value<std::string>("SELECT timeout::text FROM cafmq.tasks"),
    "00:00:30");
  // Not due for an hour: nothing to claim.
  auto q = poller();
  CAF_CHECK(claim_or_throw(*q, request({"ship"})).tasks.empty());
}

CAF_TEST(a trigger spawns in the transaction of the row that fires it) {
  pqxx::nontransaction{*conn}.exec0(
    "CREATE TABLE orders (id int PRIMARY KEY, customer text);"
    "CREATE FUNCTION orders_spawn() RETURNS trigger LANGUAGE plpgsql AS $$"
    " BEGIN"
    "  PERFORM cafmq.spawn('ship', jsonb_build_object('order', NEW.id),"
    "                      channel_name => 'orders',"
    "                      channel_args => NEW.customer, ordered => true);"
    "  RETURN NEW;"
    " END $$;"
    "CREATE TRIGGER orders_spawn AFTER INSERT ON orders"
    " FOR EACH ROW EXECUTE FUNCTION orders_spawn()");
  {
    pqxx::work tx{*conn};
    tx.exec0("INSERT INTO orders VALUES (1, 'ann')");
    // Rolled back with the order: no task.
  }
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.tasks"), 0);
  auto listener = connect();
  pqxx::nontransaction{*listener}.exec0("LISTEN cafmq_ready");
  {
    pqxx::work tx{*conn};
    tx.exec0("INSERT INTO orders VALUES (2, 'bob'), (3, 'bob')");
    tx.commit();
  }
  // Runners hear of it at commit.
  CAF_CHECK_EQUAL(listener->await_notification(5, 0), 1);
  auto q = poller();
  auto batch = claim_or_throw(*q, request({"ship"}));
  // Ordered per customer: only the first of bob's two runs now.
  CAF_REQUIRE_EQUAL(batch.tasks.size(), 1u);
  CAF_CHECK_EQUAL(batch.tasks[0].channel_args, "bob");
  CAF_CHECK_EQUAL(batch.tasks[0].payload_json.value_or(""), "{\"order\": 2}");
}

CAF_TEST(a unique key spawns once and returns the live task) {
  auto first = spawn_sql(*conn, "cafmq.spawn('t', NULL, unique_key => 'k')");
  auto second = spawn_sql(*conn, "cafmq.spawn('t', NULL, unique_key => 'k')");
  CAF_CHECK(first == second);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.tasks"), 1);
}

CAF_TEST(bad input is a clear error and writes nothing) {
  auto check = [&](const std::string& call, const std::string& expected) {
    auto msg = error_of(*conn, call);
    if (msg.find(expected) == std::string::npos)
      CAF_FAIL(call << ": expected an error with '" << expected << "', got '"
                    << msg << "'");
  };
  check("cafmq.spawn('', NULL)", "name must be 1 to 255 bytes");
  check("cafmq.spawn(NULL, NULL)", "name must be 1 to 255 bytes");
  check("cafmq.spawn(repeat('x', 256), NULL)", "name must be 1 to 255 bytes");
  check("cafmq.spawn('t', NULL, max_attempts => 0)",
        "max_attempts must be at least 1");
  check("cafmq.spawn('t', NULL, channel_args => repeat('a', 5000))",
        "channel_args must be at most 4096 bytes");
  check("cafmq.spawn('t', NULL, backoff => '-1 second')", "backoff");
  check("cafmq.spawn('t', NULL, timeout => '0 seconds')",
        "timeout must be positive");
  check("cafmq.spawn('t', to_jsonb(repeat('x', 1100000)))",
        "payload exceeds 1 MiB");
  check("cafmq.spawn('t', NULL, unique_key => '')", "unique_key");
  check("cafmq.spawn('t', NULL, jitter => 'some')", "jitter must be full");
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.tasks"), 0);
}

CAF_TEST_FIXTURE_SCOPE_END()
