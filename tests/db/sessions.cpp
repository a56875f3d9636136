// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE sessions
#include <caf/test/unit_test.hpp>

#include <thread>

#include "support/db_fixture.hpp"
#include "support/queue_helpers.hpp"

using namespace cafmq;
using namespace cafmq::test;

namespace {

// A runner's listening connection, as far as its session goes.
struct session {
  std::unique_ptr<pqxx::connection> conn;
  int pid;

  bool register_as(const std::string& node) {
    pqxx::nontransaction tx{*conn};
    return tx.exec_params1("SELECT cafmq.register_session($1)", node)[0]
      .as<bool>();
  }

  int hand_back_leftovers(const std::string& node) {
    pqxx::nontransaction tx{*conn};
    return tx.exec_params1("SELECT cafmq.hand_back_leftovers($1)", node)[0]
      .as<int>();
  }

  void record_started(const std::string& node, const std::vector<uuid>& ids) {
    std::string arr = "{";
    for (auto& id : ids)
      arr += (arr.size() > 1 ? "," : "") + to_string(id);
    arr += "}";
    pqxx::nontransaction{*conn}.exec_params(
      "SELECT cafmq.record_started($1, $2::uuid[])", node, arr);
  }

  int take_over(const std::string& node, int grace_ms = 0) {
    pqxx::nontransaction tx{*conn};
    return tx
      .exec_params1("SELECT cafmq.take_over($1, make_interval(secs => $2 / "
                    "1000.0))",
                    node, grace_ms)[0]
      .as<int>();
  }
};

struct sessions_fixture : db_fixture {
  session open_session() {
    auto c = connect();
    auto pid = c->backendpid();
    return {std::move(c), pid};
  }

  // Closes `s` and waits until its backend is gone (its locks free).
  void kill(session& s) {
    s.conn.reset();
    for (int i = 0; i < 500; ++i) {
      if (query_value<int>("SELECT count(*) FROM pg_stat_activity WHERE pid = "
                           + std::to_string(s.pid))
          == 0)
        return;
      std::this_thread::sleep_for(std::chrono::milliseconds{10});
    }
    CAF_FAIL("backend " << s.pid << " did not end");
  }

  std::vector<uuid> spawn_tasks(int n) {
    std::vector<uuid> ids;
    for (int i = 0; i < n; ++i)
      ids.push_back(spawn_builder{"t"}.retries(0).spawn(*conn)->id);
    return ids;
  }

  claim_result claim_for(const std::string& node, int limit = 32) {
    auto q = poller();
    return claim_or_throw(*q, request({"t"}, limit, node));
  }

  std::string column(const uuid& id, const std::string& col) {
    return query_value<std::string>("SELECT coalesce(" + col
                                    + "::text, 'NULL') FROM cafmq.tasks WHERE "
                                      "id = '"
                                    + to_string(id) + "'");
  }

  bool lease_expired(const uuid& id) {
    return query_value<bool>("SELECT run_at <= now() FROM cafmq.tasks WHERE "
                             "id = '"
                             + to_string(id) + "'");
  }

  int sessions_named(const std::string& node) {
    return query_value<int>("SELECT count(*) FROM cafmq.sessions WHERE node = '"
                            + node + "'");
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(session_tests, sessions_fixture)

CAF_TEST(a dead runners tasks are handed back after the grace and only started
           attempts count) {
  auto ids = spawn_tasks(3);
  auto a = open_session();
  CAF_REQUIRE(a.register_as("a"));
  CAF_REQUIRE_EQUAL(claim_for("a").tasks.size(), 3u);
  // The first started; the other two were only claimed ahead.
  a.record_started("a", {ids[0]});
  auto b = open_session();
  CAF_REQUIRE(b.register_as("b"));
  // Alive: never taken over, however often it is checked.
  CAF_CHECK_EQUAL(b.take_over("b"), 0);
  CAF_CHECK_EQUAL(b.take_over("b"), 0);
  CAF_CHECK(!query_value<bool>("SELECT suspected_at IS NOT NULL FROM "
                               "cafmq.sessions WHERE node = 'a'"));
  kill(a);
  // The first check only marks the session; the next, a grace later, hands
  // its tasks back.
  CAF_CHECK_EQUAL(b.take_over("b"), 0);
  for (auto& id : ids)
    CAF_CHECK(!lease_expired(id));
  CAF_CHECK_EQUAL(b.take_over("b"), 3);
  for (auto& id : ids) {
    CAF_CHECK(lease_expired(id));
    CAF_CHECK_EQUAL(column(id, "state"), "running");
    CAF_CHECK_EQUAL(column(id, "attempt"), "1");
  }
  CAF_CHECK_EQUAL(column(ids[0], "max_attempts"), "1");
  CAF_CHECK_EQUAL(column(ids[1], "max_attempts"), "2");
  CAF_CHECK_EQUAL(column(ids[2], "max_attempts"), "2");
  CAF_CHECK_EQUAL(sessions_named("a"), 0);
  CAF_CHECK_EQUAL(sessions_named("b"), 1);
  // The started one was its final attempt; the others run again.
  auto again = claim_for("b");
  CAF_REQUIRE_EQUAL(again.tasks.size(), 2u);
  for (auto& t : again.tasks) {
    CAF_CHECK(t.id != ids[0]);
    CAF_CHECK_EQUAL(t.attempt, 2);
  }
  CAF_CHECK_EQUAL(column(ids[0], "state"), "failed");
  CAF_CHECK_EQUAL(column(ids[0], "last_error"),
                  "lease expired during the final attempt");
  // Each loss counts for poison detection, started or not.
  CAF_CHECK_EQUAL(column(ids[1], "lost_attempts"), "1");
}

CAF_TEST(a late outcome of a runner that was taken over is fenced) {
  auto ids = spawn_tasks(1);
  auto a = open_session();
  CAF_REQUIRE(a.register_as("a"));
  auto q = poller();
  auto t = claim_or_throw(*q, request({"t"}, 32, "a")).tasks.at(0);
  kill(a);
  auto b = open_session();
  CAF_REQUIRE(b.register_as("b"));
  b.take_over("b");
  CAF_CHECK_EQUAL(b.take_over("b"), 1);
  auto again = claim_for("b").tasks.at(0);
  CAF_CHECK_EQUAL(again.attempt, 2);
  // Runner a, cut off but alive, finishes its attempt late: fenced.
  CAF_CHECK_EQUAL(q->complete({{t.id, t.attempt}})->size(), 0u);
  CAF_CHECK_EQUAL(column(ids[0], "state"), "running");
  CAF_CHECK_EQUAL(q->complete({{again.id, again.attempt}})->size(), 1u);
}

CAF_TEST(a runner that registers again within the grace keeps its tasks) {
  auto ids = spawn_tasks(1);
  auto a = open_session();
  CAF_REQUIRE(a.register_as("a"));
  CAF_REQUIRE_EQUAL(claim_for("a").tasks.size(), 1u);
  auto b = open_session();
  CAF_REQUIRE(b.register_as("b"));
  // Its listening connection breaks: the first check marks it...
  kill(a);
  CAF_CHECK_EQUAL(b.take_over("b"), 0);
  // ...it connects again, not as a fresh runner: its tasks stay its own.
  auto a2 = open_session();
  CAF_REQUIRE(a2.register_as("a"));
  CAF_CHECK_EQUAL(b.take_over("b"), 0);
  CAF_CHECK_EQUAL(b.take_over("b"), 0);
  CAF_CHECK(!lease_expired(ids[0]));
  CAF_CHECK_EQUAL(column(ids[0], "node"), "a");
}

CAF_TEST(a node name held by a live session is refused and a new runner of a
           dead ones name hands back what it left) {
  auto ids = spawn_tasks(2);
  auto a = open_session();
  CAF_REQUIRE(a.register_as("a"));
  CAF_REQUIRE_EQUAL(claim_for("a").tasks.size(), 2u);
  auto twin = open_session();
  CAF_CHECK(!twin.register_as("a"));
  CAF_CHECK_EQUAL(twin.hand_back_leftovers("a"), -1);
  CAF_CHECK(!lease_expired(ids[0]));
  kill(a);
  // The same node name, started again (a configured name): what the dead
  // one left is handed back before the new one claims.
  auto again = open_session();
  CAF_CHECK_EQUAL(again.hand_back_leftovers("a"), 2);
  for (auto& id : ids) {
    CAF_CHECK(lease_expired(id));
    CAF_CHECK_EQUAL(column(id, "max_attempts"), "2");
  }
  CAF_CHECK_EQUAL(sessions_named("a"), 0);
  CAF_REQUIRE(again.register_as("a"));
  CAF_CHECK_EQUAL(sessions_named("a"), 1);
}

CAF_TEST(sessions of an earlier server incarnation wait for their leases) {
  auto ids = spawn_tasks(1);
  auto a = open_session();
  CAF_REQUIRE(a.register_as("a"));
  CAF_REQUIRE_EQUAL(claim_for("a").tasks.size(), 1u);
  // As if the server had restarted since a registered.
  pqxx::nontransaction{*conn}.exec(
    "UPDATE cafmq.sessions SET incarnation = incarnation - interval '1 hour' "
    "WHERE node = 'a'");
  kill(a);
  auto b = open_session();
  CAF_REQUIRE(b.register_as("b"));
  CAF_CHECK_EQUAL(b.take_over("b"), 0);
  CAF_CHECK_EQUAL(b.take_over("b"), 0);
  CAF_CHECK(!lease_expired(ids[0]));
  // Forgotten once it holds no running task.
  CAF_CHECK_EQUAL(sessions_named("a"), 1);
  pqxx::nontransaction{*conn}.exec(
    "UPDATE cafmq.tasks_live SET state = 'pending'");
  b.take_over("b");
  CAF_CHECK_EQUAL(sessions_named("a"), 0);
}

CAF_TEST_FIXTURE_SCOPE_END()
