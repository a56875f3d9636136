// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE upgrade
#include <caf/test/unit_test.hpp>

#include <map>

#include "cafmq/admin.hpp"
#include "cafmq/migrate.hpp"
#include "cafmq/sql.hpp"
#include "cafmq/sql_schema.hpp"
#include "support/db_fixture.hpp"
#include "support/queue_helpers.hpp"

using namespace cafmq;
using namespace cafmq::test;

namespace {

// Every task as JSON, by id, with its JSON payload: from the payloads
// table before schema 15, from the row after (columns later migrations add
// are NULL, or has_children, false: left out).
std::map<std::string, std::string> rows(db_fixture& f, bool payload_table) {
  std::map<std::string, std::string> result;
  pqxx::nontransaction tx{*f.conn};
  auto payload = payload_table ? "(SELECT p.json FROM cafmq.payloads p WHERE "
                                 "p.id = t.id)"
                               : "t.payload_json";
  for (const auto& row : tx.exec(
         std::string{"SELECT id::text, (jsonb_strip_nulls(to_jsonb(t) "
                     "- 'payload_json' - 'has_children') || jsonb_build_object("
                     "'payload', "}
         + payload + "))::text FROM cafmq.tasks t"))
    result.emplace(row[0].as<std::string>(), row[1].as<std::string>());
  return result;
}

uuid to_uuid(const std::string& x) {
  return *uuid::parse(x);
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(upgrade_tests, db_fixture)

CAF_TEST(a schema 13 database keeps every task through storage v2) {
  // The database as schema 13 left it (payloads in a table of their own,
  // finished tasks in the one table), one task in each state, with limits,
  // a pause and a schedule.
  pqxx::nontransaction{*conn}.exec0("DROP SCHEMA cafmq CASCADE");
  std::vector<std::string> ids;
  {
    pqxx::work tx{*conn};
    tx.exec(sql::migrate_bootstrap);
    // Spawned by schema 13's own function (the functions of later schemas
    // are in files of this binary's layout).
    auto apply = [&](int from, int to) {
      for (const auto& m : sql::migrations) {
        if (m.version < from || m.version > to)
          continue;
        tx.exec(m.text);
        tx.exec_params(sql::migrate_record, m.version, std::string{m.name},
                       std::string{m.checksum});
      }
    };
    apply(1, 13);
    for (int i = 0; i < 7; ++i)
      ids.push_back(tx.exec1("SELECT cafmq.spawn('t', jsonb_build_object('i', "
                             + std::to_string(i) + "))::text")[0]
                      .as<std::string>());
    auto set = [&](int i, const std::string& assignments) {
      tx.exec0("UPDATE cafmq.tasks SET " + assignments + " WHERE id = '"
               + ids[i] + "'");
    };
    set(1, "run_at = now() + interval '1 hour'");
    set(2, "state = 'running', attempt = 1, started_at = now(), run_at = "
           "now() - interval '1 s', node = 'gone'");
    set(3, "state = 'uncommitted', commit_deadline = now() + interval '1 h'");
    set(4, "state = 'completed', attempt = 1, finished_at = now(), result = "
           "'{\"r\": 1}'");
    set(5, "state = 'failed', attempt = 5, last_error = 'boom', finished_at "
           "= now()");
    set(6, "state = 'cancelled', cancel_requested = true, finished_at = now()");
    tx.exec0("INSERT INTO cafmq.channel_limits (channel_name, max_running) "
             "VALUES ('limited', 2)");
    tx.exec0("INSERT INTO cafmq.pauses (kind, value) VALUES ('channel', "
             "'paused')");
    tx.exec0("INSERT INTO cafmq.schedules (name, spec, every, next_run_at) "
             "VALUES ('hourly', '{\"name\": \"t\"}', '1 hour', now() + "
             "interval '1 hour')");
    tx.commit();
  }
  auto before = rows(*this, true);
  CAF_REQUIRE_EQUAL(before.size(), 7u);
  CAF_REQUIRE_EQUAL(value_or(migrate(*conn), -1), latest_schema_version());
  // Nothing lost or changed: the view shows every row as it was.
  CAF_CHECK(rows(*this, false) == before);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.tasks_live"), 4);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM "
                                   "cafmq.tasks_history WHERE state IN "
                                   "('completed', 'failed', 'cancelled')"),
                  3);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.channel_limits "
                                   "WHERE channel_name = 'limited'"),
                  1);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.pauses"), 1);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.schedules "
                                   "WHERE name = 'hourly' AND every = "
                                   "interval '1 hour'"),
                  1);
  // Every kind runs to its end: the reservation committed, the scheduled
  // one due, the lost attempt claimed again, the failed one retried.
  CAF_REQUIRE_EQUAL(commit(*conn, {to_uuid(ids[3])})->size(), 1u);
  age_task(*conn, to_uuid(ids[1]), 7200);
  CAF_REQUIRE(retry(*conn, {to_uuid(ids[5])}));
  auto q = poller();
  auto batch = claim_or_throw(*q, request({"t"}, 10));
  CAF_CHECK_EQUAL(batch.tasks.size(), 5u);
  std::vector<attempt_ref> refs;
  for (const auto& t : batch.tasks) {
    refs.push_back({t.id, t.attempt});
    CAF_CHECK(t.payload_json.has_value());
  }
  CAF_CHECK_EQUAL(q->complete(refs)->size(), 5u);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.tasks_live"), 0);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.tasks WHERE "
                                   "state = 'completed'"),
                  6);
  CAF_CHECK_EQUAL(state_of(*conn, to_uuid(ids[6])), "cancelled");
  // The lost attempt ran as attempt 2; the others kept their numbers.
  CAF_CHECK_EQUAL(query_value<int>("SELECT attempt FROM cafmq.tasks WHERE id "
                                   "= '"
                                   + ids[2] + "'"),
                  2);
  CAF_CHECK_EQUAL(query_value<std::string>("SELECT result::text FROM "
                                           "cafmq.tasks WHERE id = '"
                                           + ids[4] + "'"),
                  R"({"r": 1})");
}

CAF_TEST_FIXTURE_SCOPE_END()
