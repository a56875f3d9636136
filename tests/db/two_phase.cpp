// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE two_phase
#include <caf/test/unit_test.hpp>

#include <future>
#include <thread>

#include "support/db_fixture.hpp"
#include "support/queue_helpers.hpp"

using namespace cafmq;
using namespace cafmq::test;

namespace {

// Spawns an ordered reservation (30 s to commit) and its successor in
// channel "o"; returns their ids.
std::pair<uuid, uuid> reservation_and_successor(pqxx::connection_base& conn) {
  auto ids = spawn_or_throw(
    conn, {spawn_builder{"t"}.channel_name("o").ordered().commit_interval(
             std::chrono::seconds{30}),
           spawn_builder{"t"}.channel_name("o").ordered()});
  return {ids[0].id, ids[1].id};
}

} // namespace

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
  auto reserved_id = uuid::random();
  auto reserved = spawn_builder{"t"}
                    .id(reserved_id)
                    .channel_name("o")
                    .ordered()
                    .commit_interval(std::chrono::seconds{30})
                    .json(0);
  auto next_id = uuid::random();
  auto next
    = spawn_builder{"t"}.id(next_id).channel_name("o").ordered().json(1);
  spawn_or_throw(*conn, {reserved, next});
  auto q = poller();
  CAF_CHECK(claim_or_throw(*q, request({"t"})).tasks.empty());
  // Committed: the reservation runs first, then its successor.
  CAF_REQUIRE_EQUAL(commit(*conn, {reserved_id})->size(), 1u);
  auto batch = claim_or_throw(*q, request({"t"}));
  CAF_REQUIRE_EQUAL(batch.tasks.size(), 1u);
  CAF_CHECK(batch.tasks[0].id == reserved_id);
  CAF_REQUIRE(q->complete({{reserved_id, 1}}));
  batch = claim_or_throw(*q, request({"t"}));
  CAF_REQUIRE_EQUAL(batch.tasks.size(), 1u);
  CAF_CHECK(batch.tasks[0].id == next_id);
}

CAF_TEST(an expired ordered reservation releases its successors) {
  auto [reserved_id, next_id] = reservation_and_successor(*conn);
  auto q = poller();
  CAF_CHECK(claim_or_throw(*q, request({"t"})).tasks.empty());
  age_task(*conn, reserved_id, 60);
  // Expired, even before maintenance removes it: the successor runs, and a
  // late commit cannot bring the reservation back behind it.
  auto batch = claim_or_throw(*q, request({"t"}));
  CAF_REQUIRE_EQUAL(batch.tasks.size(), 1u);
  CAF_CHECK(batch.tasks[0].id == next_id);
  CAF_CHECK(commit(*conn, {reserved_id})->empty());
}

CAF_TEST(a late commit cannot revive a reservation its successor passed) {
  auto [reserved_id, next_id] = reservation_and_successor(*conn);
  // A committing transaction that started just before the deadline...
  auto other = connect();
  pqxx::work late{*other};
  auto started = late.exec1("SELECT now()::text")[0].as<std::string>();
  pqxx::nontransaction{*conn}.exec0(
    "UPDATE cafmq.tasks_live SET commit_deadline = '" + started
    + "'::timestamptz + interval '1 millisecond' WHERE id = '"
    + to_string(reserved_id) + "'");
  while (query_value<bool>("SELECT clock_timestamp() <= '" + started
                           + "'::timestamptz + interval '1 millisecond'"))
    std::this_thread::yield();
  // ...loses against a claim that sees the reservation expired.
  auto q = poller();
  auto batch = claim_or_throw(*q, request({"t"}));
  CAF_REQUIRE_EQUAL(batch.tasks.size(), 1u);
  CAF_CHECK(batch.tasks[0].id == next_id);
  auto committed = commit(late, {reserved_id});
  CAF_REQUIRE(committed);
  CAF_CHECK(committed->empty());
  late.commit();
  auto found = exists(*conn, reserved_id);
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

CAF_TEST(a reservation past its deadline reads as expired before maintenance) {
  auto id = spawn_builder{"t"}
              .commit_interval(std::chrono::seconds{30})
              .spawn(*conn)
              ->id;
  age_task(*conn, id, 60);
  auto st = status(*conn, id);
  CAF_REQUIRE(!st);
  CAF_CHECK_EQUAL(code_of(st.error()), errc::reservation_expired);
  CAF_MESSAGE(render(st.error()));
  // A watch ends at once with the same error, without an uncommitted step.
  std::vector<std::string> seen;
  auto err = watch(
    url, id, [&](const task_status& x) { seen.push_back(to_string(x.state)); },
    std::chrono::hours{1});
  CAF_CHECK_EQUAL(code_of(err), errc::reservation_expired);
  CAF_CHECK(seen.empty());
  // Once maintenance removed it, it is gone.
  CAF_REQUIRE_EQUAL(value_or(expire_reservations(*conn), std::int64_t{-1}), 1);
  CAF_CHECK_EQUAL(code_of(status(*conn, id).error()), errc::unknown_task);
}

CAF_TEST(a watch ends when a reservation passes its deadline) {
  auto id = spawn_builder{"t"}
              .commit_interval(std::chrono::milliseconds{300})
              .spawn(*conn)
              ->id;
  std::vector<std::string> seen;
  // Without notifications and with an hour between polls, the deadline
  // itself must end the watch.
  auto watcher = std::async(std::launch::async, [&] {
    return watch(
      url, id,
      [&](const task_status& x) { seen.push_back(to_string(x.state)); },
      std::chrono::hours{1});
  });
  CAF_REQUIRE(watcher.wait_for(std::chrono::seconds{60})
              == std::future_status::ready);
  CAF_CHECK_EQUAL(code_of(watcher.get()), errc::reservation_expired);
  CAF_CHECK_EQUAL(seen, std::vector<std::string>{"uncommitted"});
}

CAF_TEST_FIXTURE_SCOPE_END()
