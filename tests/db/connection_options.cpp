// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE connection_options
#include <caf/test/unit_test.hpp>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "cafmq/connection_options.hpp"
#include "cafmq/spawn.hpp"
#include "support/db_fixture.hpp"
#include "support/queue_helpers.hpp"

using namespace cafmq;
using namespace cafmq::test;

namespace {

std::string show(pqxx::connection_base& conn, const std::string& setting) {
  pqxx::nontransaction tx{conn};
  return tx.exec1("SHOW " + setting)[0].as<std::string>();
}

// Where the server took `setting` from: "client" for the startup packet,
// "session" for SET.
std::string source_of(pqxx::connection_base& conn, const std::string& setting) {
  pqxx::nontransaction tx{conn};
  return tx
    .exec_params1("SELECT source FROM pg_settings WHERE name = $1", setting)[0]
    .as<std::string>();
}

int sockopt(int fd, int level, int name) {
  int value = -1;
  socklen_t len = sizeof(value);
  if (::getsockopt(fd, level, name, &value, &len) != 0)
    CAF_FAIL("getsockopt failed on socket " << fd);
  return value;
}

// How often this session ran its prepared statement `name` (0: never
// prepared).
int prepared_runs(pqxx::connection_base& c, const std::string& name) {
  pqxx::nontransaction tx{c};
  return tx
    .exec_params1("SELECT coalesce(sum(generic_plans + custom_plans), 0) "
                  "FROM pg_prepared_statements WHERE name = $1",
                  name)[0]
    .as<int>();
}

// Spawns one task on `c` in a transaction of its own.
void spawn_on(pqxx::connection_base& c) {
  pqxx::work tx{c};
  CAF_REQUIRE(spawn_builder{"t"}.spawn(tx));
  tx.commit();
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(connection_options_tests, db_fixture)

CAF_TEST(a queue connection opened with options has them in effect) {
  connection_options opts;
  opts.statement_timeout = std::chrono::milliseconds{1234};
  opts.idle_in_transaction_session_timeout = std::chrono::milliseconds{5678};
  opts.application_name = "cafmq's db test";
  auto q = open_poller(url, opts);
  auto& c = q->connection();
  CAF_CHECK_EQUAL(show(c, "statement_timeout"), "1234ms");
  CAF_CHECK_EQUAL(show(c, "idle_in_transaction_session_timeout"), "5678ms");
  CAF_CHECK_EQUAL(show(c, "application_name"), "cafmq's db test");
  CAF_CHECK_EQUAL(source_of(c, "statement_timeout"), "client");
  CAF_CHECK_EQUAL(source_of(c, "idle_in_transaction_session_timeout"),
                  "client");
  auto pid
    = pqxx::nontransaction{c}.exec1("SELECT pg_backend_pid()")[0].as<int>();
  pqxx::nontransaction tx{*conn};
  auto seen = tx.exec_params1("SELECT application_name FROM pg_stat_activity "
                              "WHERE pid = $1",
                              pid);
  CAF_CHECK_EQUAL(seen[0].as<std::string>(), "cafmq's db test");
}

CAF_TEST(the one argument open uses the defaults) {
  auto q = open_poller(url);
  auto& c = q->connection();
  CAF_CHECK_EQUAL(show(c, "statement_timeout"), "30s");
  CAF_CHECK_EQUAL(show(c, "idle_in_transaction_session_timeout"), "1min");
  CAF_CHECK_EQUAL(show(c, "application_name"), "cafmq");
}

CAF_TEST(without session settings in the startup packet they are SET) {
  connection_options opts;
  opts.send_session_settings = false;
  opts.statement_timeout = std::chrono::seconds{7};
  auto q = open_poller(url, opts);
  auto raw = open_connection(url, opts);
  CAF_REQUIRE(raw);
  for (auto c : {&q->connection(), raw->get()}) {
    CAF_CHECK_EQUAL(show(*c, "statement_timeout"), "7s");
    CAF_CHECK_EQUAL(show(*c, "idle_in_transaction_session_timeout"), "1min");
    CAF_CHECK_EQUAL(source_of(*c, "statement_timeout"), "session");
    CAF_CHECK_EQUAL(source_of(*c, "idle_in_transaction_session_timeout"),
                    "session");
  }
}

CAF_TEST(a setting in the url wins on the server) {
  auto sep = url.find('?') == std::string::npos ? "?" : "&";
  auto own
    = url + sep + "application_name=mine&options=-c%20statement_timeout%3D9s";
  auto q = open_poller(own);
  auto& c = q->connection();
  CAF_CHECK_EQUAL(show(c, "statement_timeout"), "9s");
  CAF_CHECK_EQUAL(show(c, "idle_in_transaction_session_timeout"), "1min");
  CAF_CHECK_EQUAL(show(c, "application_name"), "mine");
}

CAF_TEST(keepalive settings reach the tcp socket) {
  connection_options opts;
  opts.keepalives_idle = std::chrono::seconds{11};
  opts.keepalives_interval = std::chrono::seconds{4};
  opts.keepalives_count = 2;
  opts.tcp_user_timeout = std::chrono::milliseconds{12345};
  auto q = open_poller(tcp_url(), opts);
  auto& c = q->connection();
  CAF_REQUIRE(
    !pqxx::nontransaction{c}.exec1("SELECT inet_server_addr()")[0].is_null());
  auto fd = c.sock();
  CAF_CHECK_EQUAL(sockopt(fd, SOL_SOCKET, SO_KEEPALIVE), 1);
  CAF_CHECK_EQUAL(sockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE), 11);
  CAF_CHECK_EQUAL(sockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL), 4);
  CAF_CHECK_EQUAL(sockopt(fd, IPPROTO_TCP, TCP_KEEPCNT), 2);
  CAF_CHECK_EQUAL(sockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT), 12345);
}

CAF_TEST(a statement past statement_timeout fails and the connection stays) {
  connection_options opts;
  opts.statement_timeout = std::chrono::milliseconds{200};
  auto q = open_poller(url, opts);
  // A first claim plans the claim's functions (tens of ms on a busy
  // machine): done before, so the claim after the timeout is not the first.
  CAF_REQUIRE(q->claim(request({"t"})));
  // Were the timeout lost, the sleep would end and the check below fail.
  auto slept = guarded([&]() -> caf::error {
    pqxx::nontransaction{q->connection()}.exec0("SELECT pg_sleep(60)");
    return caf::none;
  });
  CAF_MESSAGE(render(slept));
  CAF_CHECK_EQUAL(code_of(slept), errc::database);
  CAF_CHECK_NOT_EQUAL(render(slept).find("statement timeout"),
                      std::string::npos);
  // A cancelled statement leaves the session as it was.
  auto claimed = q->claim(request({"t"}));
  CAF_REQUIRE(claimed);
  CAF_CHECK(claimed->tasks.empty());
}

CAF_TEST(cafmq statements run prepared on the connections it opens) {
  auto opened = open_connection(url);
  CAF_REQUIRE(opened);
  auto& conn = **opened;
  for (int i = 0; i < 3; ++i)
    spawn_on(conn);
  CAF_CHECK_EQUAL(prepared_runs(conn, "cafmq_spawn"), 3);
  // Not where turned off.
  connection_options off;
  off.prepare_statements = false;
  auto plain = open_connection(url, off);
  CAF_REQUIRE(plain);
  spawn_on(**plain);
  CAF_CHECK_EQUAL(prepared_runs(**plain, "cafmq_spawn"), 0);
  // Nor on the application's own connection, unless it asks, while it asks.
  pqxx::connection own{url};
  spawn_on(own);
  CAF_CHECK_EQUAL(prepared_runs(own, "cafmq_spawn"), 0);
  {
    prepared_statements asked{own};
    {
      // A second for the same connection, gone before the first.
      prepared_statements again{own};
      spawn_on(own);
    }
    spawn_on(own);
    CAF_CHECK_EQUAL(prepared_runs(own, "cafmq_spawn"), 2);
  }
  spawn_on(own);
  CAF_CHECK_EQUAL(prepared_runs(own, "cafmq_spawn"), 2);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.tasks_live"), 8);
}

CAF_TEST(a connection that libpqxx reopens prepares the statements again) {
  auto opened = open_connection(url);
  CAF_REQUIRE(opened);
  auto& conn = **opened;
  auto pid = [&] {
    return pqxx::nontransaction{conn}
      .exec1("SELECT pg_backend_pid()")[0]
      .as<int>();
  };
  spawn_on(conn);
  auto before = pid();
  query_value<bool>("SELECT pg_terminate_backend(" + std::to_string(before)
                    + ")");
  // The first use finds the connection broken; libpqxx reopens it at the
  // next.
  auto failures = 0;
  for (int i = 0; i < 3; ++i) {
    try {
      spawn_on(conn);
      break;
    } catch (const pqxx::broken_connection&) {
      ++failures;
    }
  }
  CAF_CHECK_LESS(failures, 3);
  CAF_CHECK_NOT_EQUAL(pid(), before);
  spawn_on(conn);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.tasks_live"), 3);
  // Both spawns of the new session ran prepared: prepared there again.
  CAF_CHECK_EQUAL(prepared_runs(conn, "cafmq_spawn"), 2);
}

CAF_TEST_FIXTURE_SCOPE_END()
