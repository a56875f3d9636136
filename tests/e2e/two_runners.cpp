// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE two_runners
#include <caf/test/unit_test.hpp>

#include <thread>

#include "support/db_fixture.hpp"
#include "support/process.hpp"
#include "support/queue_helpers.hpp"

using namespace cafmq;
using namespace cafmq::test;

namespace {

FILE* start_record_runner(const std::string& url, const std::string& node) {
  return start_process(std::string{CAFMQ_E2E_RUNNER} + " '" + url + "' " + node
                       + " 8 16");
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(two_runner_tests, db_fixture)

CAF_TEST(two runner processes run every task exactly once and in order) {
  create_e2e_ledgers(*conn);
  constexpr int unordered = 10000;
  constexpr int ordered_channels = 4;
  constexpr int ordered_per_channel = 250;
  std::vector<spawn_builder> xs;
  // First, more gates than one runner has slots: each waits until both
  // runners ran something, so whichever starts first cannot drain the
  // queue before the other one is up, however loaded the machine.
  constexpr int gates = 24;
  for (int i = 0; i < gates; ++i)
    xs.push_back(spawn_builder{"gate"}.channel_name("g").json(
      nlohmann::json{{"until", "(SELECT count(DISTINCT node) FROM (SELECT "
                               "node FROM e2e_starts UNION SELECT node FROM "
                               "e2e_runs) x) = 2"}}));
  spawn_or_throw(*conn, xs);
  xs.clear();
  for (int i = 0; i < unordered; ++i)
    xs.push_back(spawn_builder{"record"}
                   .channel_name("u")
                   .channel_args(std::to_string(i % 100))
                   .json(i));
  spawn_or_throw(*conn, xs);
  xs.clear();
  // Ordered tasks interleaved across channels, in one batch.
  for (int i = 0; i < ordered_per_channel; ++i)
    for (int c = 0; c < ordered_channels; ++c)
      xs.push_back(spawn_builder{"record"}
                     .channel_name("o")
                     .channel_args(std::to_string(c))
                     .ordered()
                     .json(i));
  spawn_or_throw(*conn, xs);
  auto a = start_record_runner(url, "a");
  auto b = start_record_runner(url, "b");
  CAF_REQUIRE(a != nullptr && b != nullptr);
  std::string out_a, out_b;
  CAF_CHECK_EQUAL(finish_process(a, out_a), 0);
  CAF_CHECK_EQUAL(finish_process(b, out_b), 0);
  CAF_MESSAGE(out_a << out_b);
  constexpr int total
    = gates + unordered + ordered_channels * ordered_per_channel;
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM e2e_runs"), total);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(DISTINCT id) FROM e2e_runs"),
                  total);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.tasks WHERE "
                                   "state = 'completed' AND attempt = 1"),
                  total);
  CAF_CHECK_GREATER(query_value<int>("SELECT count(*) FROM e2e_runs WHERE "
                                     "node = 'a'"),
                    0);
  CAF_CHECK_GREATER(query_value<int>("SELECT count(*) FROM e2e_runs WHERE "
                                     "node = 'b'"),
                    0);
  // Within each ordered channel: spawn order, and each task starts after the
  // previous one finished, whichever process ran it.
  CAF_CHECK_EQUAL(
    query_value<int>(
      "SELECT count(*) FROM (SELECT payload, started, lag(payload) OVER w AS "
      "prev, lag(finished) OVER w AS prev_finished FROM e2e_runs WHERE "
      "channel LIKE 'o/%' WINDOW w AS (PARTITION BY channel ORDER BY "
      "started, finished)) x WHERE prev IS NOT NULL AND (payload <> prev + 1 "
      "OR started < prev_finished)"),
    0);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(DISTINCT node) FROM "
                                   "e2e_runs WHERE channel LIKE 'o/%'"),
                  2);
}

CAF_TEST(a third process watches a task another process runs and we cancel) {
  auto id = spawn_builder{"wait_cancel"}.retries(3).spawn(*conn)->id;
  auto runner = start_record_runner(url, "a");
  CAF_REQUIRE(runner != nullptr);
  // Waits (two minutes at most) until `sql` counts something.
  auto wait_until_some = [&](const std::string& sql) {
    for (int i = 0; i < 12000 && query_value<int>(sql) == 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds{10});
    CAF_REQUIRE_NOT_EQUAL(query_value<int>(sql), 0);
  };
  wait_until_some("SELECT count(*) FROM cafmq.tasks WHERE state = 'running'");
  auto watcher = start_process(std::string{CAFMQ_CLI} + " '--database-url="
                               + url + "' watch " + to_string(id));
  wait_until_some("SELECT count(*) FROM cafmq.watches");
  std::string cancel_out;
  CAF_CHECK_EQUAL(
    finish_process(start_process(std::string{CAFMQ_CLI} + " '--database-url="
                                 + url + "' cancel " + to_string(id)),
                   cancel_out),
    0);
  CAF_CHECK(cancel_out.find("cancel=requested") != std::string::npos);
  std::string watch_out, runner_out;
  CAF_CHECK_EQUAL(finish_process(watcher, watch_out), 0);
  CAF_CHECK_EQUAL(finish_process(runner, runner_out), 0);
  CAF_MESSAGE(watch_out);
  auto running = watch_out.find("state=running attempt=1/4");
  auto cancelled = watch_out.find("state=cancelled attempt=1/4");
  CAF_CHECK(running != std::string::npos);
  CAF_CHECK(cancelled != std::string::npos);
  CAF_CHECK_LESS(running, cancelled);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.watches"), 0);
}

CAF_TEST_FIXTURE_SCOPE_END()
