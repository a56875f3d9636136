// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE retry
#include <caf/test/unit_test.hpp>

#include "cafmq/current_task.hpp"
#include "support/db_fixture.hpp"
#include "support/queue_helpers.hpp"

using namespace cafmq;
using namespace cafmq::test;

namespace {

// Seconds from the database's now() until the task may run again.
// The database's clock, in seconds since the epoch.
double database_clock(db_fixture& f) {
  return f.query_value<double>("SELECT extract(epoch FROM clock_timestamp())");
}

// Spawns `n` tasks with `jitter` (backoff 100 s, cap 1 h), fails each first
// attempt retryably, and returns how many retries were scheduled outside
// [lo, hi] seconds after the failure and how many distinct delays there are.
std::pair<int, int> jittered_retries(db_fixture& f, retry_jitter jitter, int n,
                                     int lo, int hi) {
  std::vector<spawn_builder> xs(n, spawn_builder{"t"}
                                     .retries(1)
                                     .backoff(std::chrono::seconds{100})
                                     .backoff_cap(std::chrono::hours{1})
                                     .jitter(jitter));
  spawn_or_throw(*f.conn, xs);
  auto q = f.poller();
  auto batch = claim_or_throw(*q, request({"t"}, n));
  if (batch.tasks.size() != static_cast<size_t>(n))
    throw std::runtime_error("claimed " + std::to_string(batch.tasks.size()));
  std::vector<attempt_failure> failures;
  for (auto& t : batch.tasks)
    failures.push_back({{t.id, t.attempt}, "boom", true});
  auto before = f.query_value<std::string>("SELECT now()::text");
  if (!q->fail(failures))
    throw std::runtime_error("fail did not record");
  auto after = f.query_value<std::string>("SELECT now()::text");
  auto outside = f.query_value<int>(
    "SELECT count(*) FROM cafmq.tasks WHERE state <> 'pending' OR run_at < '"
    + before + "'::timestamptz + make_interval(secs => " + std::to_string(lo)
    + ") OR run_at > '" + after + "'::timestamptz + make_interval(secs => "
    + std::to_string(hi) + ")");
  auto distinct
    = f.query_value<int>("SELECT count(DISTINCT run_at) FROM cafmq.tasks");
  return {outside, distinct};
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(retry_tests, db_fixture)

CAF_TEST(failures back off exponentially up to the cap then fail) {
  auto id = spawn_builder{"t"}
              .retries(5)
              .backoff(std::chrono::seconds{10})
              .backoff_cap(std::chrono::seconds{35})
              .spawn(*conn)
              ->id;
  auto q = poller();
  // The retry delay counts from the failure's statement: it lies between
  // run_at minus the clock after the failure and run_at minus the clock
  // before it (no bound on how long the statement took).
  std::vector<std::pair<double, double>> delays;
  std::vector<double> want{10, 20, 35, 35, 35};
  for (int attempt = 1; attempt <= 6; ++attempt) {
    auto batch = claim_or_throw(*q, request({"t"}));
    CAF_REQUIRE_EQUAL(batch.tasks.size(), 1u);
    CAF_CHECK_EQUAL(batch.tasks[0].attempt, attempt);
    auto error = "boom " + std::to_string(attempt);
    auto before = database_clock(*this);
    auto recorded = q->fail({{{id, attempt}, error, true}});
    CAF_REQUIRE(recorded && recorded->size() == 1u);
    // The failure is recorded at once, not when the lease runs out.
    auto st = status(*conn, id);
    CAF_CHECK(st->last_error == error);
    if (attempt < 6) {
      CAF_CHECK_EQUAL(to_string(st->state), "pending");
      auto after = database_clock(*this);
      auto run_at = query_value<double>(
        "SELECT extract(epoch FROM run_at) FROM cafmq.tasks WHERE id = '"
        + to_string(id) + "'");
      delays.emplace_back(run_at - after, run_at - before);
      // Not claimable before the backoff passed.
      CAF_CHECK(claim_or_throw(*q, request({"t"})).tasks.empty());
      age_task(*conn, id, 3600);
    } else {
      CAF_CHECK_EQUAL(to_string(st->state), "failed");
      CAF_CHECK(st->finished_at.has_value());
    }
  }
  CAF_REQUIRE_EQUAL(delays.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    CAF_MESSAGE("retry " << i + 1 << ": between " << delays[i].first << " and "
                         << delays[i].second << " s");
    CAF_CHECK_LESS_OR_EQUAL(delays[i].first, want[i] + 0.001);
    CAF_CHECK_GREATER_OR_EQUAL(delays[i].second, want[i] - 0.001);
  }
  CAF_CHECK(claim_or_throw(*q, request({"t"})).tasks.empty());
}

CAF_TEST(a non retryable failure fails at once) {
  auto id = spawn_builder{"t"}.retries(10).spawn(*conn)->id;
  auto q = poller();
  auto t = claim_or_throw(*q, request({"t"})).tasks.at(0);
  auto recorded = q->fail({{{id, t.attempt}, "bad payload", false}});
  CAF_REQUIRE(recorded);
  CAF_REQUIRE_EQUAL(recorded->size(), 1u);
  CAF_CHECK_EQUAL(recorded->at(0).state, "failed");
  auto st = status(*conn, id);
  CAF_CHECK_EQUAL(to_string(st->state), "failed");
  CAF_CHECK_EQUAL(st->attempt, 1);
  CAF_CHECK(st->last_error == std::string{"bad payload"});
}

CAF_TEST(a lease expiring in the final attempt fails the task) {
  auto id = spawn_builder{"t"}.retries(0).spawn(*conn)->id;
  auto q = poller();
  CAF_REQUIRE_EQUAL(claim_or_throw(*q, request({"t"})).tasks.size(), 1u);
  age_task(*conn, id, 3600);
  CAF_CHECK(claim_or_throw(*q, request({"t"})).tasks.empty());
  auto st = status(*conn, id);
  CAF_CHECK_EQUAL(to_string(st->state), "failed");
  CAF_CHECK(st->last_error
            == std::string{"lease expired during the final attempt"});
}

CAF_TEST(error texts with any bytes are recorded) {
  auto id = spawn_builder{"t"}.spawn(*conn)->id;
  auto q = poller();
  auto t = claim_or_throw(*q, request({"t"})).tasks.at(0);
  std::string error{"quote ' \" backslash \\ brace { } nul \0 end", 41};
  CAF_REQUIRE(q->fail({{{id, t.attempt}, error, true}}));
  auto st = status(*conn, id);
  CAF_CHECK(st->last_error
            == std::string{"quote ' \" backslash \\ brace { } nul  end"});
}

CAF_TEST(full jitter draws each retry delay between zero and the backoff) {
  auto [outside, distinct]
    = jittered_retries(*this, retry_jitter::full, 200, 0, 100);
  CAF_CHECK_EQUAL(outside, 0);
  CAF_CHECK_GREATER(distinct, 100);
}

CAF_TEST(equal jitter draws each retry delay in the upper half) {
  auto [outside, distinct]
    = jittered_retries(*this, retry_jitter::equal, 200, 50, 100);
  CAF_CHECK_EQUAL(outside, 0);
  CAF_CHECK_GREATER(distinct, 100);
}

CAF_TEST(without jitter every retry waits the backoff) {
  auto [outside, distinct]
    = jittered_retries(*this, retry_jitter::none, 50, 100, 100);
  CAF_CHECK_EQUAL(outside, 0);
  CAF_CHECK_EQUAL(
    query_value<int>("SELECT count(DISTINCT run_at) FROM cafmq.tasks"), 1);
}

CAF_TEST_FIXTURE_SCOPE_END()
