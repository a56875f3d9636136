// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE maintenance
#include <caf/test/dsl.hpp>

#include <algorithm>

#include "cafmq/actors/detail/maintenance.hpp"
#include "support/stand_ins.hpp"

using namespace caf;
using namespace cafmq;
using namespace cafmq::actors;
using namespace cafmq::test;
using namespace std::chrono_literals;

namespace {

struct maintenance_fixture : unit_fixture {
  maintenance_fixture() {
    cfg.maintenance_interval = 60s;
    cfg.compact_after_hold = 60s;
    cfg.schedule_interval = 0s;
  }

  void start() {
    auto db = stand_in_db(log);
    maintenance = keep(spawn_maintenance(sys, context(), db, db));
  }

  maintenance_actor maintenance;
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(maintenance_tests, maintenance_fixture)

CAF_TEST(a held snapshot that ends is followed by one compaction) {
  // Held for 2 min, then 2 min 5 s; then the oldest transaction is 10 s
  // old (another one: a rebuild would wait for it); then none.
  log->snapshot_ages = {120000, 125000, 10000};
  log->bloated = {"tasks_pkey", "tasks_unordered_ready"};
  start();
  advance(60s);
  CAF_CHECK_EQUAL(log->snapshot_checks, 1);
  CAF_CHECK(logged("a transaction keeps vacuum from the live table"));
  // While held, it looks every 5 s and compacts nothing.
  advance(5s);
  CAF_CHECK_EQUAL(log->snapshot_checks, 2);
  advance(5s);
  CAF_CHECK_EQUAL(log->snapshot_checks, 3);
  CAF_CHECK_EQUAL(log->vacuums, 0);
  // No transaction left: a vacuum, the rebuilds it named, a vacuum.
  advance(5s);
  CAF_CHECK_EQUAL(log->snapshot_checks, 4);
  CAF_CHECK_EQUAL(log->vacuums, 2);
  CAF_CHECK_EQUAL(log->rebuilt, log->bloated);
  CAF_CHECK(logged("live table compacted after a held snapshot"));
  // Then it looks every maintenance interval again, and does nothing more.
  advance(59s);
  CAF_CHECK_EQUAL(log->snapshot_checks, 4);
  advance(1s);
  CAF_CHECK_EQUAL(log->snapshot_checks, 5);
  for (int i = 0; i < 10; ++i)
    advance(60s);
  CAF_CHECK_EQUAL(log->snapshot_checks, 15);
  CAF_CHECK_EQUAL(log->vacuums, 2);
  CAF_CHECK_EQUAL(log->rebuilt.size(), 2u);
}

CAF_TEST(transactions shorter than the limit compact nothing) {
  log->snapshot_ages = {59000, 30000, 1000};
  log->bloated = {"tasks_pkey"};
  start();
  for (int i = 0; i < 4; ++i)
    advance(60s);
  CAF_CHECK_EQUAL(log->snapshot_checks, 4);
  CAF_CHECK_EQUAL(log->vacuums, 0);
  CAF_CHECK(log->rebuilt.empty());
  CAF_CHECK(!logged("keeps vacuum"));
}

CAF_TEST(a limit of zero never looks) {
  cfg.compact_after_hold = 0s;
  log->snapshot_ages = {120000};
  start();
  for (int i = 0; i < 10; ++i)
    advance(60s);
  CAF_CHECK_EQUAL(log->snapshot_checks, 0);
  CAF_CHECK_EQUAL(log->vacuums, 0);
}

CAF_TEST(the live table is vacuumed when due and asked every second) {
  cfg.vacuum_dead_rows = 5000;
  log->vacuum_answers = {false, true, false};
  start();
  advance(999ms);
  CAF_CHECK(log->vacuum_asks.empty());
  advance(1ms);
  CAF_CHECK_EQUAL(log->vacuum_asks, std::vector<std::int64_t>{5000});
  // Whatever the answer, the next ask comes a second later.
  for (int i = 0; i < 4; ++i)
    advance(1s);
  CAF_CHECK_EQUAL(log->vacuum_asks.size(), 5u);
  CAF_CHECK(std::all_of(log->vacuum_asks.begin(), log->vacuum_asks.end(),
                        [](std::int64_t x) { return x == 5000; }));
  // The compaction's vacuums are another thing.
  CAF_CHECK_EQUAL(log->vacuums, 0);
}

CAF_TEST(zero dead rows leaves the vacuum to autovacuum) {
  cfg.vacuum_dead_rows = 0;
  start();
  for (int i = 0; i < 3; ++i)
    advance(60s);
  CAF_CHECK(log->vacuum_asks.empty());
}

CAF_TEST_FIXTURE_SCOPE_END()
