// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE remote_workers
#include <caf/test/unit_test.hpp>

#include <csignal>
#include <fstream>
#include <optional>
#include <thread>

#include "support/db_fixture.hpp"
#include "support/process.hpp"
#include "support/queue_helpers.hpp"

using namespace cafmq;
using namespace cafmq::test;
using namespace std::chrono_literals;

namespace {

constexpr const char* worker_secret = "e2e-secret";

// The runner node: owns the database, runs no handler of the workers'
// tasks, publishes its node actor; runs until DIR/stop exists. Its output
// goes to DIR/node.log.
FILE* start_node(const std::string& url, const scratch& s, int lease_ms) {
  return start_process(std::string{CAFMQ_E2E_RUNNER_NODE} + " '" + url
                       + "' runner " + worker_secret + " " + s.dir + " "
                       + std::to_string(lease_ms) + " > " + s.path("node.log"));
}

// A worker node joined to the runner node; `more` are the helper's
// optional arguments (the database's URL for remote_complete_tx). With
// `hold_after` set, its handlers never return after that many started, and
// the first to hold writes DIR/NAME.holding.
FILE* start_worker(const scratch& s, const std::string& name, int capacity,
                   const std::string& more = {},
                   std::optional<int> hold_after = {}) {
  auto port = s.wait_for("port");
  auto env = hold_after
               ? "env CAFMQ_E2E_HOLD_AFTER=" + std::to_string(*hold_after) + " "
               : std::string{};
  return start_process("exec " + env + CAFMQ_E2E_WORKER + " 127.0.0.1 " + port
                       + " " + worker_secret + " " + name + " "
                       + std::to_string(capacity) + " " + s.dir + " " + more);
}

void stop_node(const scratch& s) {
  std::ofstream{s.path("stop")} << "stop\n";
}

long long realtime_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
}

struct remote_fixture : db_fixture {
  // Runs what is spawned on a runner node (`lease_ms`) with workers a and b
  // (`more`: their optional arguments), kills a once it holds attempts
  // that never end (its handlers hold after `a_finishes` started), waits
  // until nothing is pending or running, and stops the node: a ended by
  // its kill, b and the node cleanly.
  void drain_killing_a(const scratch& s, int lease_ms, const std::string& more,
                       int a_finishes) {
    auto node = start_node(url, s, lease_ms);
    CAF_REQUIRE(node != nullptr);
    auto a = start_worker(s, "a", 8, more, a_finishes);
    auto b = start_worker(s, "b", 8, more);
    CAF_REQUIRE(a != nullptr && b != nullptr);
    auto pid_a = std::stoi(s.wait_for("a.pid"));
    // worker_node::wait_joined: each worker knows when its join was
    // accepted.
    CAF_CHECK_EQUAL(s.wait_for("a.joined"), "joined");
    CAF_CHECK_EQUAL(s.wait_for("b.joined"), "joined");
    s.wait_for("a.holding", 120s);
    CAF_REQUIRE_EQUAL(kill(pid_a, SIGKILL), 0);
    CAF_CHECK(wait_until_drained(120s));
    stop_node(s);
    std::string out_node, out_a, out_b;
    CAF_CHECK_NOT_EQUAL(finish_process(a, out_a), 0);
    CAF_CHECK_EQUAL(finish_process(b, out_b), 0);
    CAF_CHECK_EQUAL(finish_process(node, out_node), 0);
    CAF_MESSAGE(s.wait_for("node.log") << out_a << out_b);
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(remote_worker_tests, remote_fixture)

CAF_TEST(worker nodes run every task once and a killed one loses nothing) {
  constexpr int total = 5000;
  // A lease of an hour: an attempt that waited out its lease would not run
  // again before the drain's deadline, so the drain itself shows that the
  // lost attempts failed at once (no time is compared with a bound).
  constexpr int lease_ms = 3600 * 1000;
  std::vector<spawn_builder> xs;
  for (int i = 0; i < total; ++i)
    xs.push_back(spawn_builder{"remote_record"}
                   .channel_args(std::to_string(i % 50))
                   .json(i));
  spawn_or_throw(*conn, xs);
  // The database's ledger: a row per completion, written by the completing
  // transaction itself (the workers have no database).
  pqxx::nontransaction{*conn}.exec0(
    "CREATE TABLE completions (id uuid, attempt int);"
    "CREATE FUNCTION record_completion() RETURNS trigger LANGUAGE plpgsql AS "
    "$$ BEGIN INSERT INTO completions VALUES (NEW.id, NEW.attempt); RETURN "
    "NEW; END $$;"
    "CREATE TRIGGER record_completion AFTER INSERT ON cafmq.tasks_history "
    "FOR EACH ROW WHEN (NEW.state = 'completed') EXECUTE FUNCTION "
    "record_completion()");
  scratch s;
  // Midway, while it holds attempts, worker a dies without a word.
  drain_killing_a(s, lease_ms, "", 200);
  // The handlers' ledger: one line per attempt a handler finished, written
  // before it returned.
  pqxx::nontransaction{*conn}.exec0(
    "CREATE TABLE ledger (id uuid, attempt int, node text)");
  for (auto name : {"a", "b"}) {
    std::ifstream in{s.path(std::string{name} + ".ledger")};
    pqxx::work tx{*conn};
    for (std::string id, node; in >> id;) {
      int attempt = 0;
      in >> attempt >> node;
      tx.exec_params0("INSERT INTO ledger VALUES ($1::uuid, $2, $3)", id,
                      attempt, node);
    }
    tx.commit();
  }
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.tasks WHERE "
                                   "state = 'completed'"),
                  total);
  // Every task completed exactly once, by its last attempt.
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM completions"), total);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(DISTINCT c.id) FROM "
                                   "completions c JOIN cafmq.tasks t ON t.id "
                                   "= c.id AND t.attempt = c.attempt"),
                  total);
  // Each completion was a handler that ran to its end: exactly one ledger
  // line for the completed attempt, none for a later one.
  CAF_CHECK_EQUAL(
    query_value<int>("SELECT count(*) FROM cafmq.tasks t WHERE (SELECT "
                     "count(*) FROM ledger l WHERE l.id = t.id AND l.attempt "
                     "= t.attempt) <> 1"),
    0);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM ledger l JOIN "
                                   "cafmq.tasks t USING (id) WHERE l.attempt "
                                   "> t.attempt"),
                  0);
  // Only the killed node's attempts ran again: b never ran an attempt
  // that did not complete.
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM ledger l JOIN "
                                   "cafmq.tasks t USING (id) WHERE l.attempt "
                                   "< t.attempt AND l.node = 'b'"),
                  0);
  CAF_CHECK_GREATER(query_value<int>("SELECT count(*) FROM ledger WHERE "
                                     "node = 'a'"),
                    0);
  // The attempts a held when it died failed with the reason and ran again
  // (within the hour's lease: at once).
  auto lost = query_value<int>("SELECT count(*) FROM cafmq.tasks WHERE "
                               "last_error LIKE 'worker node a lost: %'");
  CAF_MESSAGE(lost << " attempts were lost with worker a");
  CAF_CHECK_GREATER(lost, 0);
  CAF_CHECK_EQUAL(
    query_value<int>("SELECT count(*) FROM cafmq.tasks WHERE last_error LIKE "
                     "'worker node a lost: %' AND (attempt < 2 OR state <> "
                     "'completed')"),
    0);
  // Each task names the worker that ran its completed attempt, and each
  // lost attempt the worker it was lost with.
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.tasks t JOIN "
                                   "ledger l ON l.id = t.id AND l.attempt = "
                                   "t.attempt WHERE t.worker IS DISTINCT FROM "
                                   "l.node"),
                  0);
  CAF_CHECK_EQUAL(
    query_value<int>("SELECT count(*) FROM cafmq.tasks t WHERE "
                     "last_error LIKE 'worker node a lost: %' "
                     "AND NOT t.earlier_attempts @> '[{\"outcome\": "
                     "\"failed\", \"worker\": \"a\"}]'"),
    0);
}

CAF_TEST(an attempt lost with its runner names the worker that ran it) {
  std::vector<spawn_builder> xs(2, spawn_builder{"remote_record"});
  spawn_or_throw(*conn, xs);
  scratch s;
  reaper guard;
  // A lease of 2 s; the worker's handlers never return.
  auto node = start_node(url, s, 2000);
  CAF_REQUIRE(node != nullptr);
  auto a = start_worker(s, "a", 2, {}, 0);
  CAF_REQUIRE(a != nullptr);
  auto node_pid = std::stoi(s.wait_for("node.pid"));
  guard.pids.push_back(node_pid);
  guard.pids.push_back(std::stoi(s.wait_for("a.pid")));
  s.wait_for("a.holding", 120s);
  // The runner's session wrote on each running row the worker running it.
  auto on_a = [&] {
    return query_value<int>("SELECT count(*) FROM cafmq.tasks WHERE state = "
                            "'running' AND worker = 'a'");
  };
  for (int i = 0; i < 6000 && on_a() < 2; ++i)
    std::this_thread::sleep_for(10ms);
  CAF_REQUIRE_EQUAL(on_a(), 2);
  CAF_REQUIRE_EQUAL(kill(node_pid, SIGKILL), 0);
  std::string out;
  CAF_CHECK_NOT_EQUAL(finish_process(node, out), 0);
  // Once the leases lapsed, a claim finds both attempts lost, each with
  // the worker it was lost with; the new attempts name none yet.
  auto poller = this->poller();
  claim_request req;
  req.node = "heir";
  req.names = {"remote_record"};
  req.limit = 10;
  std::size_t claimed = 0;
  for (int i = 0; i < 600 && claimed < 2; ++i) {
    auto got = poller->claim(req);
    CAF_REQUIRE(got);
    claimed += got->tasks.size();
    if (claimed < 2)
      std::this_thread::sleep_for(100ms);
  }
  CAF_REQUIRE_EQUAL(claimed, 2u);
  CAF_CHECK_EQUAL(
    query_value<int>("SELECT count(*) FROM cafmq.tasks WHERE attempt = 2 AND "
                     "node = 'heir' AND worker IS NULL AND "
                     "earlier_attempts @> '[{\"attempt\": 1, \"outcome\": "
                     "\"lost\", \"node\": \"runner\", \"worker\": "
                     "\"a\"}]'"),
    2);
  kill(guard.pids.back(), SIGKILL);
  finish_process(a, out);
}

CAF_TEST(worker nodes given the database complete in their own transactions) {
  constexpr int total = 2000;
  constexpr int lease_ms = 3600 * 1000; // lost attempts fail at once
  std::vector<spawn_builder> xs;
  for (int i = 0; i < total; ++i)
    xs.push_back(
      spawn_builder{"remote_complete_tx"}.channel_args(std::to_string(i % 50)));
  spawn_or_throw(*conn, xs);
  // What the handlers' transactions wrote with their completions.
  pqxx::nontransaction{*conn}.exec0(
    "CREATE TABLE tx_ledger (id uuid, attempt int, node text)");
  scratch s;
  // Midway, worker a dies with transactions open, and perhaps completions
  // that committed but were not reported.
  drain_killing_a(s, lease_ms, "'" + url + "'", 200);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.tasks WHERE "
                                   "state = 'completed'"),
                  total);
  // Exactly once: one ledger row per task, written by its completed
  // attempt's transaction, none by an attempt that was rolled back.
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM tx_ledger"), total);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM tx_ledger l JOIN "
                                   "cafmq.tasks t ON t.id = l.id AND "
                                   "t.attempt = l.attempt"),
                  total);
  // Each names the worker whose transaction completed it.
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM tx_ledger l JOIN "
                                   "cafmq.tasks t ON t.id = l.id AND "
                                   "t.worker IS NOT DISTINCT FROM l.node"),
                  total);
  CAF_CHECK_GREATER(
    query_value<int>("SELECT count(*) FROM tx_ledger WHERE node = 'a'"), 0);
  // The attempts a held when it died failed and ran again on b.
  CAF_CHECK_GREATER(query_value<int>("SELECT count(*) FROM cafmq.tasks "
                                     "WHERE last_error LIKE 'worker node a "
                                     "lost: %'"),
                    0);
}

CAF_TEST(a worker node not given the database refuses complete in a tx) {
  auto id = spawn_builder{"remote_complete_tx"}.retries(0).spawn(*conn)->id;
  pqxx::nontransaction{*conn}.exec0(
    "CREATE TABLE tx_ledger (id uuid, attempt int, node text)");
  scratch s;
  auto node = start_node(url, s, 30000);
  CAF_REQUIRE(node != nullptr);
  auto w = start_worker(s, "w", 2, "'" + url + "' none");
  CAF_REQUIRE(w != nullptr);
  for (int i = 0; i < 12000 && state_of(*conn, id) == "pending"; ++i)
    std::this_thread::sleep_for(10ms);
  for (int i = 0; i < 12000 && state_of(*conn, id) == "running"; ++i)
    std::this_thread::sleep_for(10ms);
  CAF_CHECK_EQUAL(state_of(*conn, id), "failed");
  auto error = query_value<std::string>(
    "SELECT last_error FROM cafmq.tasks WHERE id = '" + to_string(id) + "'");
  CAF_CHECK(error.find("which has no database") != std::string::npos);
  CAF_CHECK(error.find("worker_config::database_url") != std::string::npos);
  // Its transaction was rolled back with the refusal.
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM tx_ledger"), 0);
  stop_node(s);
  std::string out_node, out_w;
  CAF_CHECK_EQUAL(finish_process(node, out_node), 0);
  CAF_CHECK_EQUAL(finish_process(w, out_w), 0);
}

CAF_TEST(a cancel reaches a handler on a worker node before any renewal) {
  scratch s;
  // A lease of an hour: the first renewal, which would also bring the
  // cancel, comes after 20 minutes, so only the pushed cancel can reach the
  // handler within the wait below.
  auto node = start_node(url, s, 3600000);
  auto w = start_worker(s, "w", 2);
  CAF_REQUIRE(node != nullptr && w != nullptr);
  auto id = spawn_builder{"remote_wait_cancel"}.spawn(*conn)->id;
  s.wait_for(to_string(id) + ".started");
  auto requested = realtime_ns();
  auto answer = cancel(*conn, id);
  CAF_REQUIRE(answer);
  auto seen = std::stoll(s.wait_for(to_string(id) + ".cancelled", 120s));
  CAF_MESSAGE("the handler saw the cancel after " << (seen - requested) / 1e6
                                                  << " ms");
  for (int i = 0; i < 1000 && state_of(*conn, id) != "cancelled"; ++i)
    std::this_thread::sleep_for(10ms);
  CAF_CHECK_EQUAL(state_of(*conn, id), "cancelled");
  stop_node(s);
  std::string out_node, out_w;
  CAF_CHECK_EQUAL(finish_process(node, out_node), 0);
  CAF_CHECK_EQUAL(finish_process(w, out_w), 0);
  CAF_MESSAGE(s.wait_for("node.log") << out_w);
}

CAF_TEST_FIXTURE_SCOPE_END()
