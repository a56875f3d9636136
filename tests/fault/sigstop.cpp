// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE sigstop
#include <caf/test/unit_test.hpp>

#include <csignal>
#include <thread>

#include "support/db_fixture.hpp"
#include "support/process.hpp"
#include "support/queue_helpers.hpp"

using namespace cafmq;
using namespace cafmq::test;

CAF_TEST_FIXTURE_SCOPE(sigstop_tests, db_fixture)

CAF_TEST(
  a runner frozen past its lease is fenced and its tasks run elsewhere once) {
  create_e2e_ledgers(*conn);
  // First attempts work 3 s; the frozen runner's lease is 1 s.
  constexpr int n = 4;
  std::vector<spawn_builder> xs;
  for (int i = 0; i < n; ++i)
    xs.push_back(spawn_builder{"hold"}.retries(3).raw_json("3000"));
  spawn_or_throw(*conn, xs);
  scratch dir;
  reaper guard;
  auto frozen
    = start_process("CAFMQ_E2E_PIDFILE='" + dir.path("frozen.pid") + "' "
                    + CAFMQ_E2E_RUNNER + " '" + url + "' frozen 4 4 1000");
  auto pid = std::stoi(dir.wait_for("frozen.pid"));
  guard.pids.push_back(pid);
  auto starts = [&](const std::string& node) {
    return query_value<int>("SELECT count(*) FROM e2e_starts WHERE node = '"
                            + node + "'");
  };
  for (int i = 0; i < 3000 && starts("frozen") < n; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  CAF_REQUIRE_EQUAL(starts("frozen"), n);
  // Frozen mid-attempt: its connections stay open (no takeover), its
  // keep-alives stop, its leases expire.
  CAF_REQUIRE_EQUAL(kill(pid, SIGSTOP), 0);
  auto other
    = start_process("CAFMQ_E2E_PIDFILE='" + dir.path("other.pid") + "' "
                    + CAFMQ_E2E_RUNNER + " '" + url + "' other 4 4");
  guard.pids.push_back(std::stoi(dir.wait_for("other.pid")));
  for (int i = 0;
       i < 3000 && query_value<int>("SELECT count(*) FROM e2e_runs") < n; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  // It thaws: its handlers finish their attempt 1 and try to complete it.
  CAF_REQUIRE_EQUAL(kill(pid, SIGCONT), 0);
  std::string output;
  CAF_CHECK_EQUAL(finish_process(other, output), 0);
  CAF_CHECK_EQUAL(finish_process(frozen, output), 0);
  CAF_MESSAGE(output);
  // The ledger, written by the completing transaction: each task once, by
  // the other runner; every late completion of the frozen one was rejected.
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM e2e_runs"), n);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(DISTINCT id) FROM e2e_runs "
                                   "WHERE node = 'other' AND attempt = 2"),
                  n);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.tasks WHERE "
                                   "state = 'completed' AND attempt = 2"),
                  n);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.tasks WHERE "
                                   "state <> 'completed'"),
                  0);
}

CAF_TEST(a runner process whose handler ignores its cancel still exits) {
  // Stopped 1 s after its start, with a shutdown timeout of 300 ms and a
  // handler grace of 100 ms: the process exits, and the attempt is handed
  // back for the next runner.
  auto id = spawn_builder{"ignore_cancel"}.spawn(*conn)->id;
  scratch dir;
  reaper guard;
  auto t0 = std::chrono::steady_clock::now();
  auto child = start_process("CAFMQ_E2E_STOP_AFTER_MS=1000 CAFMQ_E2E_PIDFILE='"
                             + dir.path("stuck.pid") + "' " + CAFMQ_E2E_RUNNER
                             + " '" + url + "' stuck 1 1");
  guard.pids.push_back(std::stoi(dir.wait_for("stuck.pid")));
  std::string output;
  CAF_CHECK_EQUAL(finish_process(child, output), 0);
  auto took = std::chrono::steady_clock::now() - t0;
  CAF_MESSAGE(output);
  CAF_MESSAGE(
    "the process exited "
    << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
    << " ms after its start");
  CAF_CHECK(output.find("stuck: stopped") != std::string::npos);
  CAF_CHECK(output.find("abandoning a handler that ignores its cancel")
            != std::string::npos);
  CAF_CHECK(query_value<bool>("SELECT state = 'running' AND attempt = 1 AND "
                              "run_at <= now() FROM cafmq.tasks WHERE id = '"
                              + to_string(id) + "'"));
}

CAF_TEST_FIXTURE_SCOPE_END()
