// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE workflows_e2e
#include <caf/test/unit_test.hpp>

#include "cafmq/workflow.hpp"
#include "support/db_fixture.hpp"
#include "support/process.hpp"
#include "support/queue_helpers.hpp"

using namespace cafmq;
using namespace cafmq::test;

CAF_TEST_FIXTURE_SCOPE(workflow_e2e_tests, db_fixture)

CAF_TEST(three runner processes run a batch callback exactly once) {
  create_e2e_ledgers(*conn);
  constexpr int members = 5000;
  batch b;
  for (int i = 0; i < members; ++i)
    b.add(spawn_builder{"record"}
            .channel_name("m")
            .channel_args(std::to_string(i % 50))
            .json(i));
  b.on_success(spawn_builder{"record"}.channel_name("cb").json(1));
  b.on_finish(spawn_builder{"record"}.channel_name("cb").json(2));
  auto spawned = b.spawn(*conn);
  CAF_REQUIRE(spawned);
  std::vector<FILE*> runners;
  for (auto node : {"a", "b", "c"})
    runners.push_back(start_process(std::string{CAFMQ_E2E_RUNNER} + " '" + url
                                    + "' " + node + " 8 16"));
  std::string out;
  for (auto* r : runners) {
    CAF_REQUIRE(r != nullptr);
    CAF_CHECK_EQUAL(finish_process(r, out), 0);
  }
  CAF_MESSAGE(out);
  // The ledger, written in each completing transaction: every member once,
  // and each callback once, whichever runner completed the last member.
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM e2e_runs"),
                  members + 2);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(DISTINCT id) FROM e2e_runs"),
                  members + 2);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM e2e_runs WHERE "
                                   "channel = 'cb/' AND payload = 1"),
                  1);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM e2e_runs WHERE "
                                   "channel = 'cb/' AND payload = 2"),
                  1);
  CAF_CHECK_GREATER_OR_EQUAL(query_value<int>("SELECT count(DISTINCT node) "
                                              "FROM e2e_runs WHERE channel "
                                              "<> 'cb/'"),
                             2);
  // The callbacks started after the last member's completion.
  CAF_CHECK(query_value<bool>(
    "SELECT min(started) FILTER (WHERE channel = 'cb/') >= max(finished) "
    "FILTER (WHERE channel <> 'cb/') FROM e2e_runs"));
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.tasks WHERE "
                                   "workflow_id = '"
                                   + to_string(b.id())
                                   + "' AND state = 'completed'"),
                  members + 2);
}

CAF_TEST_FIXTURE_SCOPE_END()
