// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE e2e_scheduling
#include <caf/test/unit_test.hpp>

#include <csignal>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "cafmq/admin.hpp"
#include "cafmq/error.hpp"
#include "cafmq/schedule.hpp"

#include "support/db_fixture.hpp"
#include "support/process.hpp"
#include "support/queue_helpers.hpp"

using namespace cafmq;
using namespace cafmq::test;
using namespace std::chrono_literals;

namespace {

// A runner process (`cafmq-e2e runner`, tests/support/e2e/runner.cpp) with
// `env` in front; it exits once no live task is left, unless `env` says
// otherwise.
FILE* start_runner(const std::string& url, const std::string& node,
                   const std::string& args = "4 8",
                   const std::string& env = "") {
  return start_process(env + " " + std::string{CAFMQ_E2E_RUNNER} + " '" + url
                       + "' " + node + " " + args);
}

// Polls `done` every 10 ms for at most `limit`; true once it holds.
bool poll_until(const std::function<bool()>& done, std::chrono::seconds limit) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until)
      return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

// The tasks of the schedule in the last test, with the tick each one is for.
constexpr const char* ticks_sql
  = "(SELECT t.id, t.state, t.attempt, split_part(t.unique_key, '@', "
    "2)::timestamptz AS tick FROM cafmq.tasks t WHERE t.unique_key LIKE "
    "'cafmq.schedule:every-second@%') ticks";

} // namespace

CAF_TEST_FIXTURE_SCOPE(scheduling_tests, db_fixture)

CAF_TEST(a global concurrency limit holds across three runner processes) {
  create_e2e_ledgers(*conn);
  channel_limit lim;
  lim.channel_name = "lim";
  lim.max_running = 2;
  auto err = set_channel_limit(*conn, lim);
  CAF_REQUIRE(!err);
  // Each runner runs one task at a time and claims none ahead: the three
  // could run three limited tasks at once without the limit, and two at
  // once are two runners holding a slot each. Each limited task waits in
  // its handler until two limited tasks started and an unlimited one
  // ended, then works 40 ms: the limit is reached on two runners, and the
  // third runner, which the limit keeps off the channel, runs the
  // unlimited ones meanwhile (were it held back too, the gates would wait
  // a minute in vain and the checks below fail).
  constexpr int limited = 60;
  constexpr int unlimited = 200;
  std::vector<spawn_builder> xs;
  for (int i = 0; i < limited; ++i)
    xs.push_back(spawn_builder{"gate"}
                   .channel_name("lim")
                   .channel_args(std::to_string(i % 5))
                   .json(nlohmann::json{
                     {"until", "(SELECT count(*) FROM e2e_starts) >= 2 AND "
                               "EXISTS (SELECT FROM e2e_runs WHERE channel "
                               "LIKE 'free/%')"},
                     {"ms", 40}}));
  for (int i = 0; i < unlimited; ++i)
    xs.push_back(spawn_builder{"record"}
                   .channel_name("free")
                   .channel_args(std::to_string(i % 10))
                   .json(i));
  spawn_or_throw(*conn, xs);
  std::vector<FILE*> runners;
  for (auto node : {"a", "b", "c"})
    runners.push_back(start_runner(url, node, "1 1", "CAFMQ_E2E_PREFETCH=0"));
  for (auto runner : runners)
    CAF_REQUIRE(runner != nullptr);
  std::string output;
  for (auto runner : runners)
    CAF_CHECK_EQUAL(finish_process(runner, output), 0);
  CAF_MESSAGE(output);
  // Every task ran once.
  constexpr int total = limited + unlimited;
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM e2e_runs"), total);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(DISTINCT id) FROM e2e_runs"),
                  total);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.tasks WHERE "
                                   "state = 'completed' AND attempt = 1"),
                  total);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM e2e_starts"), limited);
  // Each limited task held its slot from its handler's start to its end:
  // at no start were more than two of them in their handlers, and two were
  // at some.
  auto max_overlap = query_value<int>(
    "WITH iv AS (SELECT s.at AS a, r.finished AS f FROM e2e_starts s JOIN "
    "e2e_runs r USING (id, attempt) WHERE r.channel LIKE 'lim/%') SELECT "
    "max((SELECT count(*) FROM iv j WHERE j.a <= i.a AND j.f > i.a)) FROM iv "
    "i");
  CAF_MESSAGE("at most " << max_overlap << " limited tasks ran at once");
  CAF_CHECK_EQUAL(max_overlap, 2);
  // More than one runner ran them, not one that held the channel
  // throughout.
  auto lim_nodes = query_value<int>("SELECT count(DISTINCT node) FROM e2e_runs "
                                    "WHERE channel LIKE 'lim/%'");
  CAF_MESSAGE("the limited tasks ran on " << lim_nodes << " nodes");
  CAF_CHECK_GREATER(lim_nodes, 1);
  // The unlimited channel did not wait for the limited one: some of it
  // was done while limited tasks still waited for a slot.
  auto free_meanwhile = query_value<int>(
    "SELECT count(*) FROM e2e_runs WHERE channel LIKE 'free/%' AND finished "
    "< (SELECT max(at) FROM e2e_starts)");
  CAF_MESSAGE(free_meanwhile << " unlimited tasks ended before the last "
                                "limited one started");
  CAF_CHECK_GREATER(free_meanwhile, 0);
}

CAF_TEST(a rate limit holds across three runner processes) {
  create_e2e_ledgers(*conn);
  channel_limit lim;
  lim.channel_name = "rate";
  lim.rate_limit = 5;
  lim.rate_period = 1s;
  auto err = set_channel_limit(*conn, lim);
  CAF_REQUIRE(!err);
  constexpr int n = 20;
  std::vector<spawn_builder> xs;
  for (int i = 0; i < n; ++i)
    xs.push_back(spawn_builder{"record"}
                   .channel_name("rate")
                   .channel_args(std::to_string(i % 4))
                   .json(i));
  spawn_or_throw(*conn, xs);
  std::vector<FILE*> runners;
  for (auto node : {"a", "b", "c"})
    runners.push_back(start_runner(url, node));
  for (auto runner : runners)
    CAF_REQUIRE(runner != nullptr);
  std::string output;
  for (auto runner : runners)
    CAF_CHECK_EQUAL(finish_process(runner, output), 0);
  CAF_MESSAGE(output);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM e2e_runs"), n);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(DISTINCT id) FROM e2e_runs"),
                  n);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.tasks WHERE "
                                   "state = 'completed' AND attempt = 1"),
                  n);
  // The starts in every window of one second that opens at a start: at most
  // five, and five in some (the limit was reached).
  auto most = query_value<int>(
    "SELECT max((SELECT count(*) FROM cafmq.tasks j WHERE j.started_at >= "
    "i.started_at AND j.started_at < i.started_at + interval '1 s')) FROM "
    "cafmq.tasks i");
  CAF_MESSAGE("at most " << most << " starts in a second");
  CAF_CHECK_EQUAL(most, 5);
  // 20 starts at 5 per second: the 16th is at least three seconds after
  // the first.
  auto span = query_value<double>(
    "SELECT extract(epoch FROM max(started_at) - min(started_at)) FROM "
    "cafmq.tasks");
  CAF_MESSAGE("the starts spanned " << span << " s");
  CAF_CHECK_GREATER_OR_EQUAL(span, 3.0);
  auto nodes = query_value<int>("SELECT count(DISTINCT node) FROM e2e_runs");
  CAF_MESSAGE("the tasks ran on " << nodes << " nodes");
}

CAF_TEST(
  a one second schedule spawns each tick exactly once across three runners) {
  create_e2e_ledgers(*conn);
  auto err
    = add_schedule(*conn, schedule_spec{"every-second", spawn_builder{"record"},
                                        periodic::interval(1s)});
  CAF_REQUIRE(!err);
  auto first_tick
    = query_value<std::string>("SELECT next_run_at::text FROM cafmq.schedules");
  // Three runners for 30 s with a short lease, so that an attempt a killed
  // one held runs again soon.
  scratch dir;
  reaper guard;
  std::vector<FILE*> runners;
  for (auto node : {"a", "b", "c"}) {
    runners.push_back(start_runner(url, node, "2 4 3000",
                                   "CAFMQ_E2E_STOP_AFTER_MS=30000 "
                                   "CAFMQ_E2E_PIDFILE='"
                                     + dir.path(node) + "'"));
    CAF_REQUIRE(runners.back() != nullptr);
    guard.pids.push_back(std::stoi(dir.wait_for(node)));
  }
  auto ticks = [&] {
    return query_value<int>(std::string{"SELECT count(*) FROM "} + ticks_sql);
  };
  // a dies after about 10 ticks, b after about 20; c runs to the end.
  CAF_REQUIRE(poll_until([&] { return ticks() >= 10; }, 30s));
  CAF_REQUIRE_EQUAL(kill(guard.pids[0], SIGKILL), 0);
  CAF_REQUIRE(poll_until([&] { return ticks() >= 20; }, 30s));
  CAF_REQUIRE_EQUAL(kill(guard.pids[1], SIGKILL), 0);
  std::string output;
  CAF_CHECK_NOT_EQUAL(finish_process(runners[0], output), 0);
  CAF_CHECK_NOT_EQUAL(finish_process(runners[1], output), 0);
  CAF_CHECK_EQUAL(finish_process(runners[2], output), 0);
  // What the runners said (their warnings included).
  CAF_MESSAGE(output);
  output.clear();
  // A runner that fires no schedule runs what the last ticks spawned.
  CAF_CHECK_EQUAL(
    finish_process(start_runner(url, "drain", "2 4", "CAFMQ_E2E_SCHEDULE_MS=0"),
                   output),
    0);
  CAF_MESSAGE(output);
  auto n = ticks();
  CAF_MESSAGE(n << " ticks");
  CAF_CHECK_GREATER_OR_EQUAL(n, 25);
  // One task per tick, every second from the first tick to the last.
  CAF_CHECK_EQUAL(query_value<int>(std::string{"SELECT count(DISTINCT tick) "
                                               "FROM "}
                                   + ticks_sql),
                  n);
  CAF_CHECK_EQUAL(
    query_value<int>(std::string{"SELECT extract(epoch FROM max(tick) - "
                                 "min(tick))::int + 1 FROM "}
                     + ticks_sql),
    n);
  CAF_CHECK_EQUAL(query_value<std::string>(
                    std::string{"SELECT min(tick)::text FROM "} + ticks_sql),
                  first_tick);
  // Each ran to completion once (an attempt of a killed runner that did
  // not commit left no row in the ledger).
  CAF_CHECK_EQUAL(query_value<int>(std::string{"SELECT count(*) FROM "}
                                   + ticks_sql + " WHERE state = 'completed'"),
                  n);
  CAF_CHECK_EQUAL(query_value<int>(std::string{"SELECT count(*) FROM "}
                                   + ticks_sql + " JOIN e2e_runs r USING (id)"),
                  n);
  auto retried = query_value<int>(std::string{"SELECT count(*) FROM "}
                                  + ticks_sql + " WHERE attempt > 1");
  CAF_MESSAGE(retried << " tick tasks ran again after a kill");
  auto xs = list_schedules(*conn);
  CAF_REQUIRE(xs);
  CAF_REQUIRE_EQUAL(xs->size(), 1u);
  auto& x = xs->front();
  std::int64_t expected = n;
  auto spawned = x.ticks;
  auto missed = x.missed;
  auto failed = x.last_error.has_value();
  if (failed)
    CAF_MESSAGE("last error: " << *x.last_error);
  CAF_CHECK_EQUAL(spawned, expected);
  CAF_CHECK_EQUAL(missed, std::int64_t{0});
  CAF_CHECK(!failed);
}

CAF_TEST_FIXTURE_SCOPE_END()
