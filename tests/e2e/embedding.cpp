// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE embedding
#include <caf/test/unit_test.hpp>

#include <chrono>
#include <string>

#include "support/db_fixture.hpp"
#include "support/process.hpp"
#include "support/queue_helpers.hpp"

using namespace cafmq;
using namespace cafmq::test;

CAF_TEST_FIXTURE_SCOPE(embedding_tests, db_fixture)

CAF_TEST(an application with a handler that ignores its cancel still exits) {
  // The application embeds the runtime with spawn_runner in its own actor
  // system (shutdown timeout 5 s: its last writes get a reserve of 1 s,
  // ample on a loaded machine), stops it while the handler runs and
  // returns from main. The handler would run for an hour: the exit shows
  // that neither the stop nor the actor system's destructor waited for it.
  auto id = spawn_builder{"ignore_cancel"}.spawn(*conn)->id;
  scratch dir;
  auto child = start_process(std::string{CAFMQ_E2E_EMBEDDED} + " '" + url
                             + "' '" + dir.dir + "'");
  CAF_REQUIRE(child != nullptr);
  std::string output;
  CAF_CHECK_EQUAL(finish_process(child, output), 0);
  auto exited = std::chrono::steady_clock::now();
  CAF_MESSAGE(output);
  // Both clocks are CLOCK_MONOTONIC: the time from the stop to the exit.
  std::chrono::steady_clock::time_point stopping{
    std::chrono::nanoseconds{std::stoll(dir.wait_for("stopping"))}};
  auto took
    = std::chrono::duration_cast<std::chrono::milliseconds>(exited - stopping);
  CAF_MESSAGE("the process exited " << took.count()
                                    << " ms after the stop began");
  // The stop answered; "ok" when the last writes fit the reserve, which a
  // machine loaded far past its cores sometimes misses (then the hand-back
  // below lands a moment later).
  CAF_CHECK(output.find("embedded: stopped (") != std::string::npos);
  // The log names the abandoned handler...
  CAF_CHECK(output.find("abandoning a handler that ignores its cancel")
            != std::string::npos);
  CAF_CHECK(output.find(to_string(id)) != std::string::npos);
  CAF_CHECK(output.find("ignore_cancel") != std::string::npos);
  // ... and its attempt was handed back: still attempt 1, its lease ended,
  // so the next claim makes attempt 2 and fences a late outcome of 1.
  CAF_CHECK(query_value<bool>("SELECT state = 'running' AND attempt = 1 AND "
                              "run_at <= now() FROM cafmq.tasks WHERE id = '"
                              + to_string(id) + "'"));
}

CAF_TEST_FIXTURE_SCOPE_END()
