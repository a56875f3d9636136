#define CAF_SUITE signals
#include <caf/test/unit_test.hpp>

#include <string>
#include <thread>

#include <csignal>

#include "support/db_fixture.hpp"
#include "support/process.hpp"
#include "support/queue_helpers.hpp"

using namespace cafmq;
using namespace cafmq::test;

CAF_TEST_FIXTURE_SCOPE(signal_tests, db_fixture)

CAF_TEST(SIGTERM stops a runner after its running task completes) {
  create_e2e_ledgers(*conn);
  // "hold" works 1.5 s in its first attempt, then completes.
  auto id = spawn_builder{"hold"}.json(1500).spawn(*conn)->id;
  scratch dir;
  auto child = start_process(
    "CAFMQ_E2E_SIGNALS=1 CAFMQ_E2E_PIDFILE='" + dir.path("pid") + "' "
    + std::string{CAFMQ_E2E_RUNNER} + " '" + url + "' sig 1 2");
  CAF_REQUIRE(child != nullptr);
  auto pid = std::stoi(dir.wait_for("pid"));
  reaper cleanup{{pid}};
  while (query_value<int>("SELECT count(*) FROM e2e_starts") == 0)
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  CAF_REQUIRE_EQUAL(state_of(*conn, id), "running");
  CAF_REQUIRE_EQUAL(::kill(pid, SIGTERM), 0);
  std::string output;
  CAF_CHECK_EQUAL(finish_process(child, output), 0);
  cleanup.pids.clear();
  CAF_MESSAGE(output);
  CAF_CHECK(output.find("sig: stopped by signal 15") != std::string::npos);
  // The running task finished its work and completed; nothing was cut off.
  CAF_CHECK_EQUAL(state_of(*conn, id), "completed");
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM e2e_runs WHERE "
                                   "attempt = 1"),
                  1);
}

CAF_TEST_FIXTURE_SCOPE_END()
