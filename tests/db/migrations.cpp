#define CAF_SUITE migrations
#include <caf/test/unit_test.hpp>

#include <string>

#include "cafmq/error.hpp"
#include "cafmq/migrate.hpp"
#include "support/db_fixture.hpp"
#include "support/process.hpp"

using namespace cafmq;

namespace {

// Runs `cafmq --database-url=url migrate` in the background.
FILE* start_cli_migrate(const std::string& url) {
  return test::start_process(std::string{CAFMQ_CLI} + " '--database-url=" + url
                             + "' migrate");
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
  CAF_MESSAGE(render(result.error()));
}

CAF_TEST(two processes migrating a fresh database at once both succeed) {
  // A second, empty database: the fixture's own is already migrated.
  auto fresh = dbname + "_fresh";
  {
    pqxx::nontransaction tx{*conn};
    tx.exec0("CREATE DATABASE " + tx.quote_name(fresh));
  }
  auto fresh_url = test::with_database(url, fresh);
  auto a = start_cli_migrate(fresh_url);
  auto b = start_cli_migrate(fresh_url);
  CAF_REQUIRE(a != nullptr && b != nullptr);
  std::string out_a, out_b;
  CAF_CHECK_EQUAL(test::finish_process(a, out_a), 0);
  CAF_CHECK_EQUAL(test::finish_process(b, out_b), 0);
  CAF_MESSAGE("first: " << out_a << "second: " << out_b);
  {
    pqxx::connection c{fresh_url};
    pqxx::nontransaction tx{c};
    CAF_CHECK_EQUAL(
      tx.exec1("SELECT count(*) FROM cafmq.schema_version")[0].as<int>(),
      latest_schema_version());
  }
  pqxx::nontransaction tx{*conn};
  tx.exec0("DROP DATABASE " + tx.quote_name(fresh) + " WITH (FORCE)");
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
  CAF_CHECK_EQUAL(test::finish_process(start_cli_migrate(url), out), 1);
  CAF_CHECK(out.find("schema_too_new") != std::string::npos);
}

CAF_TEST_FIXTURE_SCOPE_END()
