// SPDX-License-Identifier: BSD-3-Clause
#include "support/db_fixture.hpp"

#include <atomic>
#include <cstdlib>
#include <stdexcept>

#include <libpq-fe.h>
#include <unistd.h>

#include "cafmq/error.hpp"
#include "cafmq/migrate.hpp"
#include "cafmq/uuid.hpp"

namespace cafmq::test {

std::string admin_url() {
  auto url = std::getenv("CAFMQ_DATABASE_URL");
  if (url == nullptr || *url == '\0')
    throw std::runtime_error("CAFMQ_DATABASE_URL is not set: run the tests "
                             "through scripts/test.sh, or point it at a "
                             "PostgreSQL role that may create databases");
  return url;
}

std::string with_database(const std::string& url, const std::string& dbname) {
  for (const char* scheme : {"postgresql://", "postgres://"}) {
    std::string prefix = scheme;
    if (url.compare(0, prefix.size(), prefix) != 0)
      continue;
    auto path = url.find('/', prefix.size());
    auto query = url.find('?', prefix.size());
    auto host_end = std::min(path, query);
    std::string rest = query == std::string::npos ? "" : url.substr(query);
    return url.substr(0, host_end) + "/" + dbname + rest;
  }
  return url + " dbname=" + dbname;
}

std::string history_days(pqxx::connection_base& conn) {
  pqxx::nontransaction tx{conn};
  return tx
    .exec1("SELECT coalesce(string_agg(c.relname, ' ' ORDER BY c.relname), "
           "'') FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
           "WHERE i.inhparent = 'cafmq.tasks_history'::regclass AND "
           "c.relname <> 'tasks_history_default'")[0]
    .as<std::string>();
}

namespace {

// The migrated database each test database is copied from: copying it
// costs a third of creating a database and migrating it (about 70 ms
// against 240 ms here), in each of some 200 test cases.
constexpr const char* template_name = "cafmq_test_template";

// Serializes the template's checks and copies across test processes: a
// database cannot be copied while anyone is connected to it.
constexpr const char* template_lock = "SELECT pg_advisory_lock(7361626101)";
constexpr const char* template_unlock = "SELECT pg_advisory_unlock(7361626101)";

// Makes sure the template holds this build's schema: created and migrated
// if it is missing, rebuilt if check_schema refuses it (an older build made
// it). Once per process; the caller holds the template lock.
void prepare_template(pqxx::nontransaction& admin) {
  static bool checked = false;
  if (checked)
    return;
  auto quoted = admin.quote_name(template_name);
  auto exists = !admin
                   .exec_params("SELECT 1 FROM pg_database WHERE datname = $1",
                                template_name)
                   .empty();
  auto url = with_database(admin_url(), template_name);
  if (exists) {
    auto current = [&] {
      pqxx::connection conn{url};
      return !check_schema(conn);
    }();
    if (current) {
      checked = true;
      return;
    }
    admin.exec0("DROP DATABASE " + quoted + " WITH (FORCE)");
  }
  admin.exec0("CREATE DATABASE " + quoted);
  {
    pqxx::connection conn{url};
    auto version = migrate(conn);
    if (!version)
      throw std::runtime_error("cannot migrate the test template database: "
                               + render(version.error()));
  }
  checked = true;
}

} // namespace

db_fixture::db_fixture() {
  static std::atomic<int> counter{0};
  dbname = "cafmq_test_" + std::to_string(::getpid()) + "_"
           + std::to_string(counter++) + "_"
           + to_string(uuid::random()).substr(0, 8);
  {
    pqxx::connection admin{admin_url()};
    pqxx::nontransaction tx{admin};
    tx.exec(template_lock);
    prepare_template(tx);
    tx.exec0("CREATE DATABASE " + tx.quote_name(dbname) + " TEMPLATE "
             + tx.quote_name(template_name) + " STRATEGY FILE_COPY");
    tx.exec(template_unlock);
  }
  url = with_database(admin_url(), dbname);
  conn = connect();
}

db_fixture::~db_fixture() {
  conn.reset();
  try {
    pqxx::connection admin{admin_url()};
    pqxx::nontransaction tx{admin};
    tx.exec0("DROP DATABASE IF EXISTS " + tx.quote_name(dbname)
             + " WITH (FORCE)");
  } catch (...) {
    // A leftover test database is harmless; never throw from here.
  }
}

std::unique_ptr<pqxx::connection> db_fixture::connect() const {
  return std::make_unique<pqxx::connection>(url);
}

std::shared_ptr<queue_connection> db_fixture::poller() const {
  return open_poller(url);
}

std::shared_ptr<queue_connection>
db_fixture::open_poller(const std::string& at,
                        const connection_options& opts) const {
  auto result = queue_connection::open(at, opts);
  if (!result)
    throw std::runtime_error("cannot open a queue connection: "
                             + render(result.error()));
  return *result;
}

std::string db_fixture::tcp_url() const {
  char* msg = nullptr;
  auto xs = PQconninfoParse(url.c_str(), &msg);
  if (xs == nullptr) {
    PQfreemem(msg);
    throw std::runtime_error("libpq cannot read the test database URL");
  }
  std::string host;
  for (auto x = xs; x->keyword != nullptr; ++x)
    if (x->val != nullptr && std::string{x->keyword} == "host")
      host = x->val;
  PQconninfoFree(xs);
  if (!host.empty() && host[0] != '/')
    return url;
  // A later setting wins in libpq.
  if (url.rfind("postgresql://", 0) == 0 || url.rfind("postgres://", 0) == 0)
    return url + (url.find('?') == std::string::npos ? "?" : "&")
           + "host=127.0.0.1";
  return url + " host=127.0.0.1";
}

} // namespace cafmq::test
