// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE two_phase
#include <caf/test/unit_test.hpp>

#include <thread>

#include "support/db_fixture.hpp"
#include "support/queue_helpers.hpp"

using namespace cafmq;
using namespace cafmq::test;

CAF_TEST_FIXTURE_SCOPE(two_phase_tests, db_fixture)

CAF_TEST(an uncommitted task is not claimed until committed) {
  auto id = spawn_builder{"t"}
              .channel_name("tp")
              .commit_interval(std::chrono::minutes{5})
              .spawn(*conn)
              ->id;
  CAF_CHECK_EQUAL(state_of(*conn, id), "uncommitted");
  auto q = poller();
  CAF_CHECK(claim_or_throw(*q, request({"t"})).tasks.empty());
  auto listener = connect();
  pqxx::nontransaction{*listener}.exec0("LISTEN cafmq_ready");
  auto committed = commit(*conn, {id});
  CAF_REQUIRE(committed);
  CAF_REQUIRE_EQUAL(committed->size(), 1u);
  // Commit wakes listening runners.
  CAF_CHECK_EQUAL(listener->await_notification(5, 0), 1);
  auto batch = claim_or_throw(*q, request({"t"}));
  CAF_REQUIRE_EQUAL(batch.tasks.size(), 1u);
  CAF_CHECK(batch.tasks[0].id == id);
  // Committing again is a no-op.
  CAF_CHECK(commit(*conn, {id})->empty());
}

CAF_TEST(a reservation not committed in time expires) {
  auto id = spawn_builder{"t"}
              .commit_interval(std::chrono::seconds{30})
              .spawn(*conn)
              ->id;
  age_task(*conn, id, 60);
  auto late = commit(*conn, {id});
  CAF_REQUIRE(late);
  CAF_CHECK(late->empty());
  auto q = poller();
  CAF_CHECK(claim_or_throw(*q, request({"t"})).tasks.empty());
  auto removed = expire_reservations(*conn);
  CAF_REQUIRE(removed);
  CAF_CHECK_EQUAL(*removed, 1);
  auto found = exists(*conn, id);
  CAF_CHECK(found && !*found);
}

CAF_TEST(an uncommitted ordered task holds back its successors) {
  auto reserved = spawn_builder{"t"}
                    .channel_name("o")
                    .ordered()
                    .commit_interval(std::chrono::seconds{30})
                    .json(0);
  auto next = spawn_builder{"t"}.channel_name("o").ordered().json(1);
  spawn_or_throw(*conn, {reserved, next});
  auto q = poller();
  CAF_CHECK(claim_or_throw(*q, request({"t"})).tasks.empty());
  // Committed: the reservation runs first, then its successor.
  CAF_REQUIRE_EQUAL(commit(*conn, {reserved.id()})->size(), 1u);
  auto batch = claim_or_throw(*q, request({"t"}));
  CAF_REQUIRE_EQUAL(batch.tasks.size(), 1u);
  CAF_CHECK(batch.tasks[0].id == reserved.id());
  CAF_REQUIRE(q->complete({{reserved.id(), 1}}));
  batch = claim_or_throw(*q, request({"t"}));
  CAF_REQUIRE_EQUAL(batch.tasks.size(), 1u);
  CAF_CHECK(batch.tasks[0].id == next.id());
}

CAF_TEST(an expired ordered reservation releases its successors) {
  auto reserved
    = spawn_builder{"t"}.channel_name("o").ordered().commit_interval(
      std::chrono::seconds{30});
  auto next = spawn_builder{"t"}.channel_name("o").ordered();
  spawn_or_throw(*conn, {reserved, next});
  auto q = poller();
  CAF_CHECK(claim_or_throw(*q, request({"t"})).tasks.empty());
  age_task(*conn, reserved.id(), 60);
  // Expired, even before maintenance removes it: the successor runs, and a
  // late commit cannot bring the reservation back behind it.
  auto batch = claim_or_throw(*q, request({"t"}));
  CAF_REQUIRE_EQUAL(batch.tasks.size(), 1u);
  CAF_CHECK(batch.tasks[0].id == next.id());
  CAF_CHECK(commit(*conn, {reserved.id()})->empty());
}

CAF_TEST(a late commit cannot revive a reservation its successor passed) {
  auto reserved
    = spawn_builder{"t"}.channel_name("o").ordered().commit_interval(
      std::chrono::seconds{30});
  auto next = spawn_builder{"t"}.channel_name("o").ordered();
  spawn_or_throw(*conn, {reserved, next});
  // A committing transaction that started just before the deadline...
  auto other = connect();
  pqxx::work late{*other};
  auto started = late.exec1("SELECT now()::text")[0].as<std::string>();
  pqxx::nontransaction{*conn}.exec0(
    "UPDATE cafmq.tasks SET commit_deadline = '" + started
    + "'::timestamptz + interval '1 millisecond' WHERE id = '"
    + to_string(reserved.id()) + "'");
  while (query_value<bool>("SELECT clock_timestamp() <= '" + started
                           + "'::timestamptz + interval '1 millisecond'"))
    std::this_thread::yield();
  // ...loses against a claim that sees the reservation expired.
  auto q = poller();
  auto batch = claim_or_throw(*q, request({"t"}));
  CAF_REQUIRE_EQUAL(batch.tasks.size(), 1u);
  CAF_CHECK(batch.tasks[0].id == next.id());
  auto committed = commit(late, {reserved.id()});
  CAF_REQUIRE(committed);
  CAF_CHECK(committed->empty());
  late.commit();
  auto found = exists(*conn, reserved.id());
  CAF_CHECK(found && !*found);
}

CAF_TEST(a rolled back commit commits nothing) {
  auto id = spawn_builder{"t"}
              .commit_interval(std::chrono::minutes{5})
              .spawn(*conn)
              ->id;
  {
    pqxx::work tx{*conn};
    CAF_REQUIRE_EQUAL(commit(tx, {id})->size(), 1u);
  }
  CAF_CHECK_EQUAL(state_of(*conn, id), "uncommitted");
}

CAF_TEST_FIXTURE_SCOPE_END()
