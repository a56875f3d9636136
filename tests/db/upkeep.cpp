// SPDX-License-Identifier: BSD-3-Clause
// The live table's upkeep (cafmq/admin.hpp): its vacuum when due, what
// keeps vacuum from it, and the compaction that gives back what a held
// snapshot left.
#define CAF_SUITE upkeep
#include <caf/test/unit_test.hpp>

#include <algorithm>

#include "cafmq/admin.hpp"
#include "support/db_fixture.hpp"
#include "support/queue_helpers.hpp"

using namespace cafmq;
using namespace cafmq::test;

namespace {

struct upkeep_fixture : db_fixture {
  std::int64_t index_bytes(const std::string& name) {
    return query_value<std::int64_t>("SELECT pg_relation_size('cafmq." + name
                                     + "')");
  }

  std::int64_t table_bytes() {
    return query_value<std::int64_t>(
      "SELECT pg_total_relation_size('cafmq.tasks_live')");
  }

  // The live table's indexes together.
  std::int64_t indexes_bytes() {
    return query_value<std::int64_t>(
      "SELECT pg_indexes_size('cafmq.tasks_live')");
  }

  // Indexes of the live table that are not valid.
  int invalid_indexes() {
    return query_value<int>("SELECT count(*) FROM pg_index WHERE indrelid = "
                            "'cafmq.tasks_live'::regclass AND NOT indisvalid");
  }

  // The live table's dead row versions, as the statistics have them.
  std::int64_t dead_rows() {
    return query_value<std::int64_t>(
      "SELECT pg_stat_get_dead_tuples('cafmq.tasks_live'::regclass)");
  }

  // `n` tasks in and out to the history, each leaving a dead row version;
  // this session's statistics are sent at the end (about once a second
  // otherwise).
  void dead_tasks(int n) {
    insert_backlog(*conn, "dead", n);
    pqxx::work tx{*conn};
    finish_by_hand(tx, "t.channel_name = 'dead'", "completed");
    tx.exec("SELECT pg_stat_force_next_flush()");
    tx.commit();
  }

  // `rounds` times: 20,000 ready tasks in, then all of them out to the
  // history, as a day of claims and endings leaves them: each leaves a dead
  // row version and dead entries in the indexes of ready tasks.
  void churn(int rounds) {
    for (int i = 0; i < rounds; ++i) {
      insert_backlog(*conn, "churn", 20000);
      pqxx::work tx{*conn};
      finish_by_hand(tx, "t.channel_name = 'churn'", "completed");
      tx.commit();
    }
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(upkeep_tests, upkeep_fixture)

CAF_TEST(a transaction that holds a snapshot is seen with its age) {
  auto none = oldest_snapshot(*conn);
  CAF_REQUIRE(none);
  CAF_CHECK(!*none);
  auto other = connect();
  pqxx::work held{*other};
  held.exec0("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
  held.exec1("SELECT count(*) FROM cafmq.tasks_live");
  auto seen = oldest_snapshot(*conn);
  CAF_REQUIRE(seen);
  CAF_REQUIRE(*seen);
  CAF_CHECK_GREATER_OR_EQUAL((*seen)->count(), 0);
  // A longer-running one is older: the age is the transaction's.
  pqxx::nontransaction{*conn}.exec1("SELECT pg_sleep(0.05)");
  auto later = oldest_snapshot(*conn);
  CAF_REQUIRE(later && *later);
  CAF_CHECK_GREATER_OR_EQUAL((*later)->count(), (*seen)->count() + 40);
  held.commit();
  auto after = oldest_snapshot(*conn);
  CAF_REQUIRE(after);
  CAF_CHECK(!*after);
}

CAF_TEST(the live table is vacuumed once it has enough removable dead rows) {
  // Autovacuum stays out: it would take the dead rows first.
  pqxx::nontransaction{*conn}.exec0(
    "ALTER TABLE cafmq.tasks_live SET (autovacuum_enabled = false)");
  dead_tasks(3000);
  CAF_REQUIRE_GREATER_OR_EQUAL(dead_rows(), 3000);
  // Fewer than asked for: not due.
  auto few = vacuum_live_table_if_due(*conn, 100000);
  CAF_REQUIRE(few);
  CAF_CHECK(!*few);
  CAF_CHECK_GREATER_OR_EQUAL(dead_rows(), 3000);
  auto due = vacuum_live_table_if_due(*conn, 1000);
  CAF_REQUIRE(due);
  CAF_CHECK(*due);
  CAF_CHECK_LESS(dead_rows(), 1000);
  // Nothing left to remove.
  auto again = vacuum_live_table_if_due(*conn, 1000);
  CAF_REQUIRE(again);
  CAF_CHECK(!*again);
}

CAF_TEST(no vacuum is due while a transaction older than the last runs) {
  pqxx::nontransaction{*conn}.exec0(
    "ALTER TABLE cafmq.tasks_live SET (autovacuum_enabled = false)");
  auto other = connect();
  auto held = std::make_unique<pqxx::work>(*other);
  held->exec0("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
  held->exec1("SELECT count(*) FROM cafmq.tasks_live");
  // A vacuum after the hold began: it removed what it could.
  dead_tasks(3000);
  auto first = vacuum_live_table_if_due(*conn, 1000);
  CAF_REQUIRE(first);
  CAF_CHECK(*first);
  // Still held: the dead rows stay, and vacuuming again would remove none.
  dead_tasks(3000);
  CAF_REQUIRE_GREATER_OR_EQUAL(dead_rows(), 6000);
  auto held_back = vacuum_live_table_if_due(*conn, 1000);
  CAF_REQUIRE(held_back);
  CAF_CHECK(!*held_back);
  held->commit();
  held.reset();
  auto after = vacuum_live_table_if_due(*conn, 1000);
  CAF_REQUIRE(after);
  CAF_CHECK(*after);
  CAF_CHECK_LESS(dead_rows(), 1000);
}

CAF_TEST(a compaction gives back the index pages a held snapshot left) {
  auto other = connect();
  auto held = std::make_unique<pqxx::work>(*other);
  held->exec0("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
  held->exec1("SELECT count(*) FROM cafmq.tasks_live");
  churn(5);
  // While held, vacuum removes nothing.
  auto during = vacuum_live_table(*conn);
  CAF_REQUIRE(during);
  auto pkey_held = index_bytes("tasks_pkey");
  auto ready_held = index_bytes("tasks_unordered_ready");
  CAF_MESSAGE("held: table " << table_bytes() << " B, pkey " << pkey_held
                             << " B, ready " << ready_held << " B");
  CAF_REQUIRE_GREATER(pkey_held, std::int64_t{1} << 20);
  CAF_REQUIRE_GREATER(ready_held, std::int64_t{1} << 20);
  held->commit();
  held.reset();
  // A task that is pending through the compaction, and one running.
  auto waiting = spawn_builder{"kept"}.spawn(*conn)->id;
  auto running = spawn_builder{"run"}.spawn(*conn)->id;
  auto q = poller();
  auto claimed = claim_or_throw(*q, request({"run"}));
  CAF_REQUIRE_EQUAL(claimed.tasks.size(), 1u);
  auto before = table_bytes();
  auto indexes_before = indexes_bytes();
  auto report = compact_live_table(*conn);
  CAF_REQUIRE(report);
  CAF_MESSAGE("compaction: " << report->bytes_before << " -> "
                             << report->bytes_after << " B");
  auto rebuilt = [&](const std::string& name) {
    return std::count(report->rebuilt.begin(), report->rebuilt.end(), name)
           == 1;
  };
  CAF_CHECK(rebuilt("tasks_pkey"));
  CAF_CHECK(rebuilt("tasks_unordered_ready"));
  CAF_CHECK(rebuilt("tasks_unordered_queue"));
  // Small indexes stay as they are.
  CAF_CHECK(!rebuilt("tasks_uncommitted"));
  CAF_CHECK_EQUAL(report->bytes_before, before);
  CAF_CHECK_LESS(report->bytes_after, before);
  CAF_CHECK_LESS(indexes_bytes(), indexes_before / 10);
  CAF_CHECK_LESS(index_bytes("tasks_pkey"), pkey_held / 10);
  CAF_CHECK_LESS(index_bytes("tasks_unordered_ready"), ready_held / 10);
  CAF_CHECK_EQUAL(invalid_indexes(), 0);
  // Nothing was lost: the pending task is claimed through the rebuilt
  // indexes, the running one completes.
  CAF_CHECK_EQUAL(state_of(*conn, waiting), "pending");
  auto kept = claim_or_throw(*q, request({"kept"}));
  CAF_REQUIRE_EQUAL(kept.tasks.size(), 1u);
  CAF_CHECK_EQUAL(kept.tasks[0].id, waiting);
  auto done = q->complete(
    {{running, claimed.tasks[0].attempt}, {waiting, kept.tasks[0].attempt}});
  CAF_REQUIRE(done);
  CAF_CHECK_EQUAL(done->size(), 2u);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.tasks_history "
                                   "WHERE channel_name = 'churn'"),
                  100000);
  // A second compaction finds nothing to rebuild, and gives back the
  // table's pages: the two tasks, spawned after the hold at its end (no
  // space was free before the vacuum), have left.
  auto again = compact_live_table(*conn);
  CAF_REQUIRE(again);
  CAF_CHECK(again->rebuilt.empty());
  CAF_CHECK_LESS(again->bytes_after, before / 10);
}

CAF_TEST(an index that is large because the queue is full stays) {
  insert_backlog(*conn, "backlog", 60000);
  pqxx::nontransaction{*conn}.exec0("VACUUM cafmq.tasks_live");
  CAF_REQUIRE_GREATER(index_bytes("tasks_pkey"), std::int64_t{1} << 20);
  auto names = vacuum_live_table(*conn);
  CAF_REQUIRE(names);
  CAF_CHECK(names->empty());
}

CAF_TEST(a rebuild that failed leaves an index the next vacuum drops) {
  // What a REINDEX CONCURRENTLY that failed midway leaves: an invalid
  // index named after the one it rebuilt.
  spawn_builder{"same"}.spawn(*conn);
  spawn_builder{"same"}.spawn(*conn);
  try {
    pqxx::nontransaction{*conn}.exec0(
      "CREATE UNIQUE INDEX CONCURRENTLY tasks_pkey_ccnew ON "
      "cafmq.tasks_live (name)");
    CAF_FAIL("a unique index over two equal names was built");
  } catch (const pqxx::sql_error&) {
  }
  CAF_REQUIRE_EQUAL(invalid_indexes(), 1);
  auto names = vacuum_live_table(*conn);
  CAF_REQUIRE(names);
  CAF_CHECK_EQUAL(invalid_indexes(), 0);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM pg_class WHERE "
                                   "relname = 'tasks_pkey_ccnew'"),
                  0);
}

CAF_TEST(only an index of the live table is rebuilt) {
  for (auto name : {"tasks_history_id", "nope", "tasks_pkey; DROP"}) {
    auto r = rebuild_live_index(*conn, name);
    CAF_REQUIRE(!r);
    CAF_CHECK_EQUAL(code_of(r.error()), errc::invalid_argument);
  }
  auto r = rebuild_live_index(*conn, "tasks_pkey");
  CAF_REQUIRE(r);
  CAF_CHECK_GREATER(*r, 0);
}

CAF_TEST_FIXTURE_SCOPE_END()
