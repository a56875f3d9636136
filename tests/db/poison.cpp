// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE poison
#include <caf/test/unit_test.hpp>

#include "cafmq/current_task.hpp"
#include "support/db_fixture.hpp"
#include "support/queue_helpers.hpp"

using namespace cafmq;
using namespace cafmq::test;

namespace {

constexpr auto poisoned = "lost 3 attempts in a row: its runner died or its "
                          "lease expired mid-attempt each time (poison task?)";

// A claim request for task name "t" that ends tasks after 3 lost attempts.
claim_request poison_request() {
  auto req = request({"t"});
  req.max_lost = 3;
  return req;
}

int lost_attempts(db_fixture& f, const uuid& id) {
  return f.query_value<int>("SELECT lost_attempts FROM cafmq.tasks WHERE id "
                            "= '"
                            + to_string(id) + "'");
}

// Claims `id` as attempt `attempt`, then lets its lease expire as if its
// runner had died.
claimed_task claim_and_lose(db_fixture& f, queue_connection& q, const uuid& id,
                            int attempt) {
  auto batch = claim_or_throw(q, poison_request());
  CAF_REQUIRE_EQUAL(batch.tasks.size(), 1u);
  CAF_REQUIRE(batch.tasks[0].id == id);
  CAF_REQUIRE_EQUAL(batch.tasks[0].attempt, attempt);
  age_task(*f.conn, id, 3600);
  return batch.tasks[0];
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(poison_tests, db_fixture)

CAF_TEST(a task whose attempts keep getting lost ends failed as poison) {
  auto id = spawn_builder{"t"}.retries(20).spawn(*conn)->id;
  auto q = poller();
  for (int attempt = 1; attempt <= 3; ++attempt)
    claim_and_lose(*this, *q, id, attempt);
  CAF_CHECK_EQUAL(lost_attempts(*this, id), 2);
  // The claim that finds the third loss ends the task instead of running it,
  // and says so, for its runner to report.
  auto batch = claim_or_throw(*q, poison_request());
  CAF_CHECK(batch.tasks.empty());
  CAF_REQUIRE_EQUAL(batch.ended.size(), 1u);
  CAF_CHECK(batch.ended[0].task.id == id);
  CAF_CHECK_EQUAL(batch.ended[0].task.name, "t");
  CAF_CHECK_EQUAL(batch.ended[0].task.attempt, 3);
  CAF_CHECK_EQUAL(batch.ended[0].state, "failed");
  CAF_CHECK_EQUAL(batch.ended[0].error, poisoned);
  auto st = status(*conn, id);
  CAF_CHECK_EQUAL(to_string(st->state), "failed");
  CAF_CHECK(st->last_error == std::string{poisoned});
  CAF_CHECK_EQUAL(st->attempt, 3);
  CAF_CHECK(st->finished_at.has_value());
  CAF_CHECK_EQUAL(lost_attempts(*this, id), 3);
  // It never runs again, whatever the limit.
  age_task(*conn, id, 3600);
  auto req = poison_request();
  req.max_lost = 0;
  CAF_CHECK(claim_or_throw(*q, req).tasks.empty());
  CAF_CHECK_EQUAL(state_of(*conn, id), "failed");
}

CAF_TEST(a written outcome resets the count of lost attempts) {
  auto id = spawn_builder{"t"}.retries(20).spawn(*conn)->id;
  auto q = poller();
  claim_and_lose(*this, *q, id, 1);
  auto t = claim_and_lose(*this, *q, id, 2);
  CAF_CHECK_EQUAL(lost_attempts(*this, id), 1);
  // Attempt 3 fails and is retried: two more losses are not three in a row.
  t = claim_or_throw(*q, poison_request()).tasks.at(0);
  CAF_CHECK_EQUAL(lost_attempts(*this, id), 2);
  CAF_REQUIRE_EQUAL(q->fail({{{t.id, t.attempt}, "boom", true}})->size(), 1u);
  CAF_CHECK_EQUAL(lost_attempts(*this, id), 0);
  age_task(*conn, id, 3600);
  claim_and_lose(*this, *q, id, 4);
  claim_and_lose(*this, *q, id, 5);
  // Attempt 6 checkpoints and then gets lost.
  current_task task{claim_or_throw(*q, poison_request()).tasks.at(0), q};
  CAF_CHECK_EQUAL(lost_attempts(*this, id), 2);
  CAF_REQUIRE(!task.checkpoint(checkpoint{}.json(6)));
  CAF_CHECK_EQUAL(lost_attempts(*this, id), 0);
  age_task(*conn, id, 3600);
  claim_and_lose(*this, *q, id, 7);
  // Attempt 8 is given back unstarted (a stopping runner's buffer).
  t = claim_or_throw(*q, poison_request()).tasks.at(0);
  CAF_CHECK_EQUAL(lost_attempts(*this, id), 2);
  CAF_REQUIRE_EQUAL(q->release({{t.id, t.attempt}})->size(), 1u);
  CAF_CHECK_EQUAL(lost_attempts(*this, id), 0);
  // Attempt 8 again, lost twice more: still running. Then it completes.
  claim_and_lose(*this, *q, id, 8);
  claim_and_lose(*this, *q, id, 9);
  t = claim_or_throw(*q, poison_request()).tasks.at(0);
  CAF_CHECK_EQUAL(t.attempt, 10);
  CAF_REQUIRE_EQUAL(q->complete({{t.id, t.attempt}})->size(), 1u);
  CAF_CHECK_EQUAL(lost_attempts(*this, id), 0);
  CAF_CHECK_EQUAL(state_of(*conn, id), "completed");
}

CAF_TEST(without a limit a task whose attempts keep getting lost runs again) {
  auto id = spawn_builder{"t"}.retries(20).spawn(*conn)->id;
  auto q = poller();
  auto req = poison_request();
  req.max_lost = 0;
  for (int attempt = 1; attempt <= 10; ++attempt) {
    auto batch = claim_or_throw(*q, req);
    CAF_REQUIRE_EQUAL(batch.tasks.size(), 1u);
    CAF_CHECK_EQUAL(batch.tasks[0].attempt, attempt);
    age_task(*conn, id, 3600);
  }
  auto st = status(*conn, id);
  CAF_CHECK_EQUAL(to_string(st->state), "running");
  CAF_CHECK(st->last_error == std::string{"lease expired"});
  CAF_CHECK_EQUAL(lost_attempts(*this, id), 9);
}

CAF_TEST(a lost final attempt keeps its reason) {
  auto id = spawn_builder{"t"}.retries(2).spawn(*conn)->id;
  auto q = poller();
  for (int attempt = 1; attempt <= 3; ++attempt)
    claim_and_lose(*this, *q, id, attempt);
  // Out of attempts and at the limit of lost ones: attempts ran out first.
  CAF_CHECK(claim_or_throw(*q, poison_request()).tasks.empty());
  auto st = status(*conn, id);
  CAF_CHECK_EQUAL(to_string(st->state), "failed");
  CAF_CHECK(st->last_error
            == std::string{"lease expired during the final attempt"});
}

CAF_TEST(a cancelled poison task ends cancelled) {
  auto id = spawn_builder{"t"}.retries(20).spawn(*conn)->id;
  auto q = poller();
  claim_and_lose(*this, *q, id, 1);
  claim_and_lose(*this, *q, id, 2);
  claim_and_lose(*this, *q, id, 3);
  CAF_REQUIRE(cancel(*conn, id));
  auto batch = claim_or_throw(*q, poison_request());
  CAF_CHECK(batch.tasks.empty());
  CAF_REQUIRE_EQUAL(batch.ended.size(), 1u);
  CAF_CHECK_EQUAL(batch.ended[0].state, "cancelled");
  CAF_CHECK_EQUAL(state_of(*conn, id), "cancelled");
}

CAF_TEST(the successor of an ordered poison task runs) {
  auto head_id = uuid::random();
  auto head
    = spawn_builder{"t"}.id(head_id).channel_name("o").ordered().retries(20);
  auto next_id = uuid::random();
  auto next = spawn_builder{"t"}.id(next_id).channel_name("o").ordered();
  spawn_or_throw(*conn, {head, next});
  auto q = poller();
  for (int attempt = 1; attempt <= 3; ++attempt)
    claim_and_lose(*this, *q, head_id, attempt);
  auto listener = connect();
  pqxx::nontransaction{*listener}.exec0("LISTEN cafmq_ready");
  CAF_CHECK(claim_or_throw(*q, poison_request()).tasks.empty());
  CAF_CHECK_EQUAL(state_of(*conn, head_id), "failed");
  // Runners of the channel are woken: its next task is the head now.
  CAF_CHECK_EQUAL(listener->await_notification(5, 0), 1);
  auto batch = claim_or_throw(*q, poison_request());
  CAF_REQUIRE_EQUAL(batch.tasks.size(), 1u);
  CAF_CHECK(batch.tasks[0].id == next_id);
}

CAF_TEST_FIXTURE_SCOPE_END()
