// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE isolation
#include <caf/test/unit_test.hpp>

#include <csignal>
#include <map>
#include <set>
#include <sstream>

#include "cafmq/actors/runner.hpp"
#include "cafmq/current_task.hpp"
#include "support/db_fixture.hpp"
#include "support/process.hpp"
#include "support/queue_helpers.hpp"

using namespace cafmq;
using namespace cafmq::test;
using namespace std::chrono_literals;

namespace {

struct ledger_line {
  std::string id;
  int attempt = 0;
  long pid = 0;
  std::string what;
};

std::vector<ledger_line> read_ledger(const scratch& s) {
  std::vector<ledger_line> result;
  std::ifstream in{s.path("ledger")};
  ledger_line x;
  while (in >> x.id >> x.attempt >> x.pid >> x.what)
    result.push_back(x);
  return result;
}

spawn_builder crash(const std::string& how, int until, int retries) {
  return spawn_builder{"crash"}.retries(retries).json(
    nlohmann::json{{"how", how}, {"until", until}});
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(isolation_tests, db_fixture)

CAF_TEST(a handler that aborts or segfaults kills only its worker process) {
  scratch s;
  auto runner = start_process("exec " + std::string{CAFMQ_E2E_ISOLATED} + " '"
                              + url + "' " + s.dir);
  CAF_REQUIRE(runner != nullptr);
  auto runner_pid = std::stol(s.wait_for("pid"));
  // Two tasks die on their only attempt, one on its first of four; the
  // others run beside them, in worker processes and in the runner. The
  // crashes come one after another: a process that dies fails every
  // attempt it held with its own signal.
  std::vector<spawn_builder> xs{crash("abort", 2, 0), crash("segv", 2, 0),
                                crash("abort", 2, 3)};
  for (int i = 0; i < 20; ++i) {
    xs.push_back(spawn_builder{"isolated_ok"}.channel_args(std::to_string(i)));
    xs.push_back(spawn_builder{"local_ok"}.channel_args(std::to_string(i)));
  }
  auto spawned = std::chrono::steady_clock::now();
  std::vector<uuid> ids(xs.size());
  auto spawn_range = [&](std::size_t from, std::size_t to) {
    auto made = spawn_or_throw(*conn, {xs.begin() + from, xs.begin() + to});
    for (auto i = from; i < to; ++i)
      ids[i] = made[i - from].id;
  };
  auto ended = [&](const uuid& id) {
    for (int i = 0; i < 6000; ++i) {
      auto state = state_of(*conn, id);
      if (state != "pending" && state != "running")
        return;
      std::this_thread::sleep_for(10ms);
    }
  };
  spawn_range(3, xs.size());
  for (std::size_t i = 0; i < 3; ++i) {
    spawn_range(i, i + 1);
    ended(ids[i]);
  }
  if (!wait_until_drained(60s)) {
    // What is left, and what the runner said: the clues to a rare loss
    // seen under load (issue 28).
    pqxx::nontransaction tx{*conn};
    auto ledger = read_ledger(s);
    for (auto row :
         tx.exec("SELECT name, state, attempt, coalesce(node, '-'), "
                 "run_at - now(), channel_args, coalesce(last_error, '-'), id "
                 "FROM cafmq.tasks WHERE state <> 'completed' ORDER BY name")) {
      CAF_MESSAGE("left: " << row[0].c_str() << " " << row[1].c_str()
                           << " attempt " << row[2].c_str() << " node "
                           << row[3].c_str() << " due in " << row[4].c_str()
                           << " args " << row[5].c_str() << " error "
                           << row[6].c_str());
      // Whether its handler ran (and where), or never started.
      for (auto& x : ledger)
        if (x.id == row[7].c_str())
          CAF_MESSAGE("  its ledger: attempt " << x.attempt << " pid " << x.pid
                                               << " " << x.what);
    }
    std::ofstream{s.path("stop")} << "stop\n";
    std::string out;
    finish_process(runner, out);
    CAF_FAIL("not every task ended within 60 s; the runner said:\n" << out);
  }
  auto took = std::chrono::steady_clock::now() - spawned;
  CAF_MESSAGE(
    "every task ended "
    << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
    << " ms after the spawn");
  // Nothing waited out a lease (the runner's is an hour, past every
  // deadline above): the attempts failed at once.
  // The runner lived through three crashes.
  CAF_CHECK_EQUAL(kill(static_cast<pid_t>(runner_pid), 0), 0);
  auto aborted = status(*conn, ids[0]);
  auto segfaulted = status(*conn, ids[1]);
  auto recovered = status(*conn, ids[2]);
  CAF_REQUIRE(aborted && segfaulted && recovered);
  CAF_CHECK_EQUAL(to_string(aborted->state), "failed");
  CAF_CHECK_EQUAL(to_string(segfaulted->state), "failed");
  CAF_REQUIRE(aborted->last_error && segfaulted->last_error);
  CAF_MESSAGE("recorded: " << *aborted->last_error);
  CAF_CHECK(aborted->last_error->find("was killed by signal 6 (SIGABRT)")
            != std::string::npos);
  CAF_CHECK(segfaulted->last_error->find("was killed by signal 11 (SIGSEGV)")
            != std::string::npos);
  CAF_CHECK_EQUAL(to_string(recovered->state), "completed");
  CAF_CHECK_EQUAL(recovered->attempt, 2);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.tasks WHERE "
                                   "name <> 'crash' AND state <> 'completed'"),
                  0);
  // Where each handler ran: isolated ones in worker processes (restarted
  // after each crash), the others in the runner.
  std::map<std::string, std::vector<ledger_line>> by_id;
  std::set<long> workers;
  for (auto& x : read_ledger(s)) {
    by_id[x.id].push_back(x);
    if (x.pid != runner_pid)
      workers.insert(x.pid);
  }
  for (int i = 3; i < static_cast<int>(ids.size()); ++i) {
    auto& lines = by_id[to_string(ids[i])];
    CAF_REQUIRE(!lines.empty());
    auto& last = lines.back();
    CAF_CHECK_EQUAL(last.what, "done");
    if (xs[i].name() == "local_ok")
      CAF_CHECK_EQUAL(last.pid, runner_pid);
    else
      CAF_CHECK_NOT_EQUAL(last.pid, runner_pid);
  }
  auto& comeback = by_id[to_string(ids[2])];
  CAF_REQUIRE_EQUAL(comeback.size(), 2u);
  CAF_CHECK_EQUAL(comeback[0].what, "crashing");
  CAF_CHECK_EQUAL(comeback[1].what, "done");
  CAF_CHECK_NOT_EQUAL(comeback[0].pid, comeback[1].pid);
  // Two processes at the start, and one more for each of three crashes.
  CAF_MESSAGE(workers.size() << " worker processes ran handlers");
  CAF_CHECK_GREATER_OR_EQUAL(workers.size(), 3u);
  std::ofstream{s.path("stop")} << "stop\n";
  std::string out;
  CAF_CHECK_EQUAL(finish_process(runner, out), 0);
  CAF_CHECK(out.find("STOPPED") != std::string::npos);
  CAF_MESSAGE(out);
  CAF_CHECK(out.find("worker process died, starting it again")
            != std::string::npos);
  // A stopped runner leaves no worker process behind.
  for (auto pid : workers)
    CAF_CHECK_NOT_EQUAL(kill(static_cast<pid_t>(pid), 0), 0);
}

CAF_TEST(an isolated handler completes in its own transaction) {
  pqxx::nontransaction{*conn}.exec0(
    "CREATE TABLE isolated_tx_ledger (id uuid, attempt int, pid bigint)");
  std::vector<spawn_builder> xs;
  for (int i = 0; i < 10; ++i)
    xs.push_back(spawn_builder{"isolated_tx"}.retries(0));
  spawn_or_throw(*conn, xs);
  scratch s;
  auto runner = start_process("exec " + std::string{CAFMQ_E2E_ISOLATED} + " '"
                              + url + "' " + s.dir);
  CAF_REQUIRE(runner != nullptr);
  auto runner_pid = std::stol(s.wait_for("pid"));
  CAF_CHECK(wait_until_drained(120s));
  std::ofstream{s.path("stop")} << "stop\n";
  std::string out;
  CAF_CHECK_EQUAL(finish_process(runner, out), 0);
  // The worker process was given the runner's database: each handler's
  // transaction committed with its completion, once, away from the runner.
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.tasks WHERE "
                                   "state = 'completed'"),
                  10);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM isolated_tx_ledger l "
                                   "JOIN cafmq.tasks t ON t.id = l.id AND "
                                   "t.attempt = l.attempt"),
                  10);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM isolated_tx_ledger"),
                  10);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM isolated_tx_ledger "
                                   "WHERE pid = "
                                   + std::to_string(runner_pid)),
                  0);
}

CAF_TEST(an isolated task that remote_tasks defines too is refused) {
  auto handler = [](current_task&) {
    return caf::error{};
  };
  task_definition twice{"twice", handler, {}};
  twice.isolated = true;
  actors::runner_config cfg;
  cfg.database_url = url;
  auto local = std::make_shared<registry>();
  local->add(twice);
  cfg.tasks = local;
  auto remote = std::make_shared<registry>();
  remote->add({"twice", handler, {}});
  cfg.remote_tasks = remote;
  auto r = actors::runner::start(cfg);
  CAF_REQUIRE(!r);
  CAF_CHECK_EQUAL(code_of(r.error()), errc::invalid_name);
  CAF_CHECK(render(r.error()).find("twice is defined twice")
            != std::string::npos);
}

CAF_TEST_FIXTURE_SCOPE_END()
