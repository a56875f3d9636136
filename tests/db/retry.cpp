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
double seconds_until_run(db_fixture& f, const uuid& id) {
  return f.query_value<double>(
    "SELECT round(extract(epoch FROM run_at - now())::numeric, 1) FROM "
    "cafmq.tasks WHERE id = '"
    + to_string(id) + "'");
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
  std::vector<double> delays;
  for (int attempt = 1; attempt <= 6; ++attempt) {
    auto batch = claim_or_throw(*q, request({"t"}));
    CAF_REQUIRE_EQUAL(batch.tasks.size(), 1u);
    CAF_CHECK_EQUAL(batch.tasks[0].attempt, attempt);
    auto error = "boom " + std::to_string(attempt);
    auto recorded = q->fail({{{id, attempt}, error, true}});
    CAF_REQUIRE(recorded && recorded->size() == 1u);
    // The failure is recorded at once, not when the lease runs out.
    auto st = status(*conn, id);
    CAF_CHECK(st->last_error == error);
    if (attempt < 6) {
      CAF_CHECK_EQUAL(to_string(st->state), "pending");
      delays.push_back(seconds_until_run(*this, id));
      // Not claimable before the backoff passed.
      CAF_CHECK(claim_or_throw(*q, request({"t"})).tasks.empty());
      age_task(*conn, id, 3600);
    } else {
      CAF_CHECK_EQUAL(to_string(st->state), "failed");
      CAF_CHECK(st->finished_at.has_value());
    }
  }
  CAF_CHECK_EQUAL(delays, (std::vector<double>{10, 20, 35, 35, 35}));
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

CAF_TEST_FIXTURE_SCOPE_END()
