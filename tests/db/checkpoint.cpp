// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE checkpoint
#include <caf/test/unit_test.hpp>

#include "cafmq/current_task.hpp"
#include "support/db_fixture.hpp"
#include "support/queue_helpers.hpp"

using namespace cafmq;
using namespace cafmq::test;

CAF_TEST_FIXTURE_SCOPE(checkpoint_tests, db_fixture)

CAF_TEST(the next attempt sees the checkpointed payload) {
  auto id = spawn_builder{"t"}.json(0).bytes("old").spawn(*conn)->id;
  auto q = poller();
  current_task first{claim_or_throw(*q, request({"t"})).tasks.at(0), q};
  CAF_CHECK_EQUAL(value_or(first.json<int>(), -1), 0);
  CAF_REQUIRE(!first.checkpoint(checkpoint{}.json(500)));
  // The running attempt keeps its copy; the retry gets the new payload.
  CAF_CHECK_EQUAL(value_or(first.json<int>(), -1), 0);
  CAF_REQUIRE(q->fail({{first.ref(), "crash", true}}));
  age_task(*conn, id, 3600);
  current_task second{claim_or_throw(*q, request({"t"})).tasks.at(0), q};
  CAF_CHECK_EQUAL(second.attempt(), 2);
  CAF_CHECK_EQUAL(value_or(second.json<int>(), -1), 500);
  CAF_CHECK(second.bytes() == std::string{"old"});
}

CAF_TEST(a checkpoint in the final attempt grants only the retries it adds) {
  auto id = spawn_builder{"t"}.retries(0).json(0).spawn(*conn)->id;
  auto q = poller();
  current_task task{claim_or_throw(*q, request({"t"})).tasks.at(0), q};
  CAF_REQUIRE(!task.checkpoint(checkpoint{}.json(1)));
  // No extra retries: the lease stays, the task is not runnable again.
  CAF_CHECK(claim_or_throw(*q, request({"t"})).tasks.empty());
  CAF_REQUIRE(!task.checkpoint(checkpoint{}.json(2).extra_retries(1)));
  auto st = status(*conn, id);
  CAF_CHECK_EQUAL(st->max_attempts, 2);
  CAF_REQUIRE(q->fail({{task.ref(), "crash", true}}));
  CAF_CHECK_EQUAL(state_of(*conn, id), "pending");
}

CAF_TEST(transactional checkpoint and completion roll back with the caller) {
  auto id
    = spawn_builder{"t"}.channel_name("o").ordered().json(0).spawn(*conn)->id;
  auto q = poller();
  current_task task{claim_or_throw(*q, request({"t"})).tasks.at(0), q};
  auto listener = connect();
  pqxx::nontransaction{*listener}.exec0("LISTEN cafmq_ready");
  auto other = connect();
  {
    // A transaction that fails after checkpoint and complete: neither sticks.
    pqxx::work tx{*other};
    tx.exec("SELECT cafmq.checkpoint('" + to_string(id)
            + "', 1, '7', NULL, 0, NULL)");
    tx.exec("SELECT cafmq.complete('{" + to_string(id) + "}', '{1}')");
  }
  CAF_CHECK_EQUAL(state_of(*conn, id), "running");
  CAF_CHECK_EQUAL(query_value<std::string>("SELECT payload_json::text FROM "
                                           "cafmq.tasks"),
                  "0");
  pqxx::nontransaction{*conn}.exec("SELECT 1");
  CAF_CHECK_EQUAL(listener->get_notifs(), 0);
  {
    pqxx::work tx{*other};
    tx.exec0("CREATE TABLE result (x int)");
    tx.exec0("INSERT INTO result VALUES (42)");
    CAF_REQUIRE(!task.checkpoint(tx, checkpoint{}.json(41)));
  }
  CAF_CHECK_EQUAL(query_value<std::string>("SELECT payload_json::text FROM "
                                           "cafmq.tasks"),
                  "41");
  {
    pqxx::work tx{*other};
    tx.exec0("INSERT INTO result VALUES (43)");
    CAF_REQUIRE(!task.complete(tx));
  }
  CAF_CHECK(task.completed());
  CAF_CHECK_EQUAL(state_of(*conn, id), "completed");
  CAF_CHECK_EQUAL(query_value<int>("SELECT sum(x) FROM result"), 85);
  // Completing an ordered task wakes the runners of its channel.
  CAF_CHECK_EQUAL(listener->await_notification(5, 0), 1);
}

CAF_TEST_FIXTURE_SCOPE_END()
