// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE migrations
#include <caf/test/unit_test.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "cafmq/error.hpp"
#include "cafmq/expected.hpp"
#include "cafmq/migrate.hpp"
#include "cafmq/sql.hpp"
#include "cafmq/sql_schema.hpp"
#include "support/db_fixture.hpp"
#include "support/process.hpp"

using namespace cafmq;

namespace {

// Runs `cafmq --database-url=url migrate` in the background.
FILE* start_cli_migrate(const std::string& url) {
  return test::start_process(std::string{CAFMQ_CLI} + " '--database-url=" + url
                             + "' migrate");
}

// A second, empty database beside the fixture's (which is migrated already),
// dropped at the end of the test.
struct empty_database {
  empty_database(test::db_fixture& f, const std::string& suffix)
    : admin(*f.conn), name(f.dbname + "_" + suffix) {
    pqxx::nontransaction tx{admin};
    tx.exec0("CREATE DATABASE " + tx.quote_name(name));
    url = test::with_database(f.url, name);
  }

  ~empty_database() {
    pqxx::nontransaction tx{admin};
    tx.exec0("DROP DATABASE " + tx.quote_name(name) + " WITH (FORCE)");
  }

  pqxx::connection_base& admin;
  std::string name;
  std::string url;
};

// Runs `sql` in its own transaction.
void exec(pqxx::connection_base& conn, const std::string& sql) {
  pqxx::work tx{conn};
  tx.exec0(sql);
  tx.commit();
}

// The error of migrating `conn`, none if it succeeds.
caf::error migrate_error(pqxx::connection_base& conn) {
  auto result = migrate(conn);
  return result ? caf::error{} : std::move(result.error());
}

// "version checksum" of every applied migration, in order.
std::string checksums(pqxx::connection_base& conn) {
  pqxx::nontransaction tx{conn};
  return tx
    .exec1("SELECT string_agg(version || ' ' || coalesce(checksum, 'NULL'), "
           "', ' ORDER BY version) FROM cafmq.schema_version")[0]
    .as<std::string>();
}

// Migrates `conn`, collecting the SQL function files it applies.
caf::expected<int> migrate_functions(pqxx::connection_base& conn,
                                     std::vector<std::string>& applied) {
  return migrate(conn, nullptr,
                 [&](const std::string& file) { applied.push_back(file); });
}

// The statements of a function file, without its comment lines.
std::string statements_of(const sql::function_file& f) {
  std::string text;
  std::istringstream in{std::string{f.text}};
  for (std::string line; std::getline(in, line);)
    if (line.find_first_not_of(' ') == std::string::npos
        || line.compare(line.find_first_not_of(' '), 2, "--") != 0)
      text += line + '\n';
  return text;
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(migration_tests, test::db_fixture)

CAF_TEST(migrating twice changes nothing) {
  auto version = schema_version(*conn);
  CAF_REQUIRE(version);
  CAF_CHECK_EQUAL(*version, latest_schema_version());
  auto again = migrate(*conn);
  CAF_REQUIRE(again);
  CAF_CHECK_EQUAL(*again, latest_schema_version());
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.schema_version"),
                  latest_schema_version());
}

CAF_TEST(every object lives in schema cafmq) {
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM pg_class c JOIN "
                                   "pg_namespace n ON n.oid = c.relnamespace "
                                   "WHERE n.nspname = 'public'"),
                  0);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM pg_proc p JOIN "
                                   "pg_namespace n ON n.oid = p.pronamespace "
                                   "WHERE n.nspname = 'public'"),
                  0);
  CAF_CHECK_GREATER(query_value<int>("SELECT count(*) FROM pg_proc p JOIN "
                                     "pg_namespace n ON n.oid = p.pronamespace "
                                     "WHERE n.nspname = 'cafmq'"),
                    5);
}

CAF_TEST(a schema newer than the binary is refused) {
  {
    pqxx::work tx{*conn};
    tx.exec_params0("INSERT INTO cafmq.schema_version (version, name) "
                    "VALUES ($1, 'from_the_future')",
                    latest_schema_version() + 1);
    tx.commit();
  }
  auto result = migrate(*conn);
  CAF_REQUIRE(!result);
  CAF_CHECK_EQUAL(code_of(result.error()), errc::schema_too_new);
  CAF_CHECK_EQUAL(code_of(check_schema(*conn)), errc::schema_too_new);
  CAF_MESSAGE(render(result.error()));
}

CAF_TEST(two processes migrating a fresh database at once both succeed) {
  empty_database fresh{*this, "fresh"};
  auto a = start_cli_migrate(fresh.url);
  auto b = start_cli_migrate(fresh.url);
  CAF_REQUIRE(a != nullptr && b != nullptr);
  std::string out_a, out_b;
  CAF_CHECK_EQUAL(test::finish_process(a, out_a), 0);
  CAF_CHECK_EQUAL(test::finish_process(b, out_b), 0);
  CAF_MESSAGE("first: " << out_a << "second: " << out_b);
  pqxx::connection c{fresh.url};
  pqxx::nontransaction tx{c};
  CAF_CHECK_EQUAL(
    tx.exec1("SELECT count(*) FROM cafmq.schema_version")[0].as<int>(),
    latest_schema_version());
}

CAF_TEST(migrate makes the history partitions of today and two ahead) {
  // So a runner's first completions do not land in the default partition
  // while its maintenance attaches today's (which fails them).
  empty_database fresh{*this, "days"};
  pqxx::connection c{fresh.url};
  CAF_REQUIRE(migrate(c));
  auto wanted = pqxx::nontransaction{c}
                  .exec1("SELECT string_agg('tasks_history_' || "
                         "to_char((now() AT TIME ZONE 'UTC')::date + d, "
                         "'YYYYMMDD'), ' ' ORDER BY d) FROM "
                         "generate_series(0, 2) d")[0]
                  .as<std::string>();
  CAF_CHECK_EQUAL(test::history_days(c), wanted);
}

CAF_TEST(every applied migration records the checksum of its file) {
  for (const auto& m : sql::migrations) {
    auto recorded = query_value<std::string>(
      "SELECT checksum FROM cafmq.schema_version WHERE version = "
      + std::to_string(m.version));
    CAF_CHECK_EQUAL(recorded, std::string{m.checksum});
    CAF_CHECK_EQUAL(recorded.size(), 64u);
  }
  CAF_CHECK(!check_schema(*conn));
}

CAF_TEST(a migration whose checksum differs is refused) {
  exec(*conn, "UPDATE cafmq.schema_version SET checksum = 'edited' "
              "WHERE version = 3");
  for (auto err : {migrate_error(*conn), check_schema(*conn)}) {
    CAF_CHECK_EQUAL(code_of(err), errc::schema_mismatch);
    CAF_CHECK(render(err).find("migration 3 (") != std::string::npos);
    CAF_MESSAGE(render(err));
  }
}

CAF_TEST(a migration the binary does not know is refused) {
  // What a migration of the same number from another branch leaves behind.
  exec(*conn, "UPDATE cafmq.schema_version SET name = 'from_a_branch' "
              "WHERE version = 2");
  for (auto err : {migrate_error(*conn), check_schema(*conn)}) {
    CAF_CHECK_EQUAL(code_of(err), errc::schema_mismatch);
    CAF_CHECK(render(err).find("migration 2 (from_a_branch)")
              != std::string::npos);
    CAF_MESSAGE(render(err));
  }
}

CAF_TEST(every SQL function file is recorded with its checksum) {
  CAF_CHECK_EQUAL(
    query_value<int>("SELECT count(*) FROM cafmq.schema_functions"),
    static_cast<int>(sql::function_count));
  for (const auto& f : sql::functions) {
    auto recorded = query_value<std::string>(
      "SELECT checksum FROM cafmq.schema_functions WHERE name = '"
      + std::string{f.name} + "'");
    CAF_CHECK_EQUAL(recorded, std::string{f.checksum});
  }
  // Up to date: migrating again applies no file.
  std::vector<std::string> applied;
  auto version = migrate_functions(*conn, applied);
  CAF_REQUIRE(version);
  CAF_CHECK(applied.empty());
}

CAF_TEST(a function whose file was renamed is gone after the migrate) {
  // Migration 12 created cafmq.claim_unpaused; it became claim_ready.sql,
  // and migration 14 drops the old name.
  CAF_CHECK(query_value<bool>(
    "SELECT to_regprocedure('cafmq.claim_unpaused(text, text[], text[], "
    "text[], integer, interval, integer, text, text)') IS NULL"));
  CAF_CHECK(query_value<bool>(
    "SELECT to_regprocedure('cafmq.claim_ready(text, text[], text[], "
    "text[], integer, interval, integer, text, text)') IS NOT NULL"));
}

CAF_TEST(every function that moves tasks into the history counts them) {
  // The finished totals (cafmq.finished_counts) are kept by the statements
  // that move tasks in, not by a trigger (a trigger cost each completion
  // almost twice as much, see docs/data-model.md): a new one must count.
  for (const auto& f : sql::functions) {
    auto text = statements_of(f);
    if (text.find("INSERT INTO cafmq.tasks_history") == std::string::npos)
      continue;
    CAF_MESSAGE(f.name << ".sql moves tasks into the history");
    CAF_CHECK(text.find("INSERT INTO cafmq.finished_counts")
              != std::string::npos);
  }
}

CAF_TEST(a fenced statement over many attempts is driven by their ids) {
  // t.state::text = 'running', not t.state = 'running': the partial index
  // tasks_running must not drive a join over the ids (see complete.sql).
  for (const auto& f : sql::functions) {
    auto text = statements_of(f);
    if (text.find("= f.attempt") == std::string::npos)
      continue;
    CAF_MESSAGE(f.name << ".sql fences attempts");
    CAF_CHECK(text.find("t.state = 'running'") == std::string::npos);
    CAF_CHECK(text.find("t.state::text = 'running'") != std::string::npos);
  }
}

CAF_TEST(every function that ends live tasks lets their children follow) {
  // A task that leaves the live table (to the history, or deleted like an
  // expired reservation) may be a parent: its children must count it down
  // or follow its failure in the same statement (cafmq.release_children),
  // or they would wait forever. clear_all deletes the edges with the tasks.
  for (const auto& f : sql::functions) {
    std::string name{f.name};
    if (name == "clear_all" || name == "release_children"
        || name == "finished_row")
      continue;
    auto text = statements_of(f);
    if (text.find("DELETE FROM cafmq.tasks_live") == std::string::npos)
      continue;
    CAF_MESSAGE(name << ".sql ends live tasks");
    CAF_CHECK(text.find("cafmq.release_children(") != std::string::npos);
  }
}

CAF_TEST(no SQL function is over 150 lines) {
  // From its CREATE to the end of its body ($$;), one function at a time
  // (a file holds the overloads of one name).
  for (const auto& f : sql::functions) {
    std::istringstream in{f.text};
    std::string line;
    int lines = 0;
    bool inside = false;
    while (std::getline(in, line)) {
      if (line.rfind("CREATE FUNCTION", 0) == 0
          || line.rfind("CREATE OR REPLACE FUNCTION", 0) == 0) {
        inside = true;
        lines = 0;
      }
      if (!inside)
        continue;
      ++lines;
      if (line.size() >= 3 && line.compare(line.size() - 3, 3, "$$;") == 0) {
        inside = false;
        if (lines > 150)
          CAF_MESSAGE("a function of " << f.name << ".sql has " << lines
                                       << " lines: split it");
        CAF_CHECK_LESS_OR_EQUAL(lines, 150);
      }
    }
    CAF_CHECK(!inside);
  }
}

CAF_TEST(the payloads of a schema 14 database move into their task rows) {
  // The database as schema 14 left it: its migrations, and tasks spawned by
  // its own functions, with their payloads in cafmq.payloads.
  exec(*conn, "DROP SCHEMA cafmq CASCADE");
  std::string json_id;
  std::string bytes_id;
  {
    pqxx::work tx{*conn};
    tx.exec(sql::migrate_bootstrap);
    for (const auto& m : sql::migrations) {
      if (m.version > 14)
        break;
      tx.exec(m.text);
      tx.exec_params(sql::migrate_record, m.version, std::string{m.name},
                     std::string{m.checksum});
    }
    json_id = tx.exec1("SELECT cafmq.spawn('t', '{\"a\": [1, 2]}')::text")[0]
                .as<std::string>();
    bytes_id
      = tx.exec1("SELECT cafmq.spawn('t', NULL)::text")[0].as<std::string>();
    tx.exec_params0("UPDATE cafmq.payloads SET bytes = '\\x0102ff' "
                    "WHERE id = $1::uuid",
                    bytes_id);
    tx.exec1("SELECT cafmq.spawn('t', NULL)");
    tx.commit();
  }
  CAF_REQUIRE_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.payloads"), 3);
  CAF_REQUIRE_EQUAL(value_or(migrate(*conn), -1), latest_schema_version());
  CAF_CHECK(query_value<bool>("SELECT to_regclass('cafmq.payloads') IS NULL"));
  CAF_CHECK_EQUAL(query_value<std::string>(
                    "SELECT payload_json::text FROM cafmq.tasks WHERE id = '"
                    + json_id + "'"),
                  R"({"a": [1, 2]})");
  CAF_CHECK_EQUAL(query_value<std::string>(
                    "SELECT encode(payload_bytes, 'hex') FROM cafmq.tasks "
                    "WHERE id = '"
                    + bytes_id + "'"),
                  "0102ff");
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.tasks WHERE "
                                   "payload_json IS NULL AND payload_bytes "
                                   "IS NULL"),
                  1);
  // The new claim hands them out with their payloads.
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.claim('n', "
                                   "'{t}', NULL, NULL, 10, '30 s', 5, NULL, "
                                   "NULL) c WHERE c.id IS NOT NULL AND "
                                   "(c.payload_json IS NOT NULL OR "
                                   "c.payload_bytes IS NOT NULL)"),
                  2);
}

CAF_TEST(an edited function file is applied on the next migrate) {
  // What a database migrated by a binary with another cancel.sql holds:
  // another body, recorded under another checksum.
  exec(*conn, "CREATE OR REPLACE FUNCTION cafmq.cancel(p_id uuid) RETURNS "
              "text LANGUAGE sql AS $$ SELECT 'from the old file' $$");
  exec(*conn, "UPDATE cafmq.schema_functions SET checksum = 'old' "
              "WHERE name = 'cancel'");
  auto err = check_schema(*conn);
  CAF_CHECK_EQUAL(code_of(err), errc::schema_mismatch);
  CAF_CHECK(render(err).find("cancel.sql") != std::string::npos);
  CAF_MESSAGE(render(err));
  std::vector<std::string> applied;
  auto version = migrate_functions(*conn, applied);
  CAF_REQUIRE(version);
  CAF_CHECK_EQUAL(*version, latest_schema_version());
  CAF_REQUIRE_EQUAL(applied.size(), 1u);
  CAF_CHECK_EQUAL(applied[0], "cancel.sql");
  // The binary's cancel again, under its checksum.
  CAF_CHECK_EQUAL(
    query_value<std::string>("SELECT cafmq.cancel('00000000-0000-4000-8000-"
                             "000000000000')"),
    "unknown");
  CAF_CHECK(!check_schema(*conn));
}

CAF_TEST(a database from before the function files gets them all) {
  // Migrated by a binary whose functions lived in the migrations only.
  exec(*conn, "DROP TABLE cafmq.schema_functions");
  auto err = check_schema(*conn);
  CAF_CHECK_EQUAL(code_of(err), errc::schema_too_old);
  CAF_CHECK(render(err).find("cafmq migrate") != std::string::npos);
  std::vector<std::string> applied;
  auto version = migrate_functions(*conn, applied);
  CAF_REQUIRE(version);
  CAF_CHECK_EQUAL(applied.size(), sql::function_count);
  CAF_CHECK(!check_schema(*conn));
}

CAF_TEST(a database missing a migration is refused) {
  exec(*conn, "DELETE FROM cafmq.schema_version WHERE version = 2");
  auto err = migrate_error(*conn);
  CAF_CHECK_EQUAL(code_of(err), errc::schema_mismatch);
  CAF_CHECK(render(err).find("migration 2 (") != std::string::npos);
  CAF_MESSAGE(render(err));
}

CAF_TEST(a database migrated before checksums existed gets them) {
  // Migrated as binaries before checksums did it: their bootstrap table,
  // then migrations 1 to 5.
  empty_database old{*this, "old"};
  pqxx::connection c{old.url};
  {
    pqxx::work tx{c};
    tx.exec0("CREATE SCHEMA cafmq");
    tx.exec0("CREATE TABLE cafmq.schema_version (version integer PRIMARY "
             "KEY, name text NOT NULL, applied_at timestamptz NOT NULL "
             "DEFAULT now())");
    for (const auto& m : sql::migrations) {
      if (m.version > 5)
        break;
      tx.exec0(m.text);
      tx.exec_params0("INSERT INTO cafmq.schema_version (version, name) "
                      "VALUES ($1, $2)",
                      m.version, std::string{m.name});
    }
    tx.commit();
  }
  CAF_CHECK_EQUAL(code_of(check_schema(c)), errc::schema_too_old);
  auto version = migrate(c);
  CAF_REQUIRE(version);
  CAF_CHECK_EQUAL(*version, latest_schema_version());
  CAF_CHECK(!check_schema(c));
  CAF_CHECK_EQUAL(checksums(c), checksums(*conn));
}

CAF_TEST(a schema older than the binary fails the check) {
  auto latest = std::to_string(latest_schema_version());
  exec(*conn, "DELETE FROM cafmq.schema_version WHERE version = " + latest);
  auto err = check_schema(*conn);
  CAF_CHECK_EQUAL(code_of(err), errc::schema_too_old);
  CAF_MESSAGE(render(err));
}

CAF_TEST(the cli reports a newer schema clearly) {
  {
    pqxx::work tx{*conn};
    tx.exec_params0("INSERT INTO cafmq.schema_version (version, name) "
                    "VALUES ($1, 'from_the_future')",
                    latest_schema_version() + 1);
    tx.commit();
  }
  std::string out;
  // Exit code 5: the database's schema is not this binary's.
  CAF_CHECK_EQUAL(test::finish_process(start_cli_migrate(url), out), 5);
  CAF_CHECK(out.find("schema_too_new") != std::string::npos);
}

CAF_TEST_FIXTURE_SCOPE_END()
