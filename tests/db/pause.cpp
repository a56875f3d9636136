// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE pause
#include <caf/test/unit_test.hpp>

#include <map>

#include "support/db_fixture.hpp"
#include "support/queue_helpers.hpp"

using namespace cafmq;
using namespace cafmq::test;

namespace {

// Claims batches of `limit` with `req` until one comes back empty, completing
// each task; returns how many tasks of each channel name ran.
std::map<std::string, int> drain(queue_connection& q, claim_request req,
                                 int limit) {
  req.limit = limit;
  std::map<std::string, int> result;
  for (;;) {
    auto batch = claim_or_throw(q, req);
    if (batch.tasks.empty())
      return result;
    std::vector<attempt_ref> refs;
    for (auto& t : batch.tasks) {
      ++result[t.channel_name];
      refs.push_back({t.id, t.attempt});
    }
    if (q.complete(refs)->size() != refs.size())
      throw std::runtime_error("completion refused");
  }
}

// `n` tasks named "t" in each of `names`, over three channel args each.
void spawn_in(pqxx::connection_base& conn,
              const std::vector<std::string>& names, int n,
              bool ordered = false) {
  std::vector<spawn_builder> xs;
  for (int i = 0; i < n; ++i)
    for (auto& name : names)
      xs.push_back(spawn_builder{"t"}
                     .channel_name(name)
                     .channel_args(std::to_string(i % 3))
                     .ordered(ordered));
  spawn_or_throw(conn, xs);
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(pause_tests, db_fixture)

CAF_TEST(a paused channel is not claimed while the others are) {
  spawn_in(*conn, {"a", "b", "c"}, 12);
  auto q = poller();
  auto req = request({"t"});
  req.paused = {"b"};
  // Small batches: the rotation passes "b" many times, and fills batches.
  using counts = std::map<std::string, int>;
  CAF_CHECK_EQUAL(drain(*q, req, 2), (counts{{"a", 12}, {"c", 12}}));
  CAF_CHECK_EQUAL(drain(*q, req, 32), counts{});
  // Resumed: claimed again.
  req.paused.clear();
  CAF_CHECK_EQUAL(drain(*q, req, 2), (counts{{"b", 12}}));
}

CAF_TEST(a paused ordered channel is not claimed while the others are) {
  spawn_in(*conn, {"a", "b", "c"}, 6, true);
  auto q = poller();
  auto req = request({"t"});
  req.paused = {"a", "c"};
  using counts = std::map<std::string, int>;
  CAF_CHECK_EQUAL(drain(*q, req, 2), (counts{{"b", 6}}));
  req.paused = {"c"};
  CAF_CHECK_EQUAL(drain(*q, req, 2), (counts{{"a", 6}}));
  req.paused.clear();
  CAF_CHECK_EQUAL(drain(*q, req, 2), (counts{{"c", 6}}));
}

CAF_TEST(expired leases of a paused channel wait for it to resume) {
  auto id = spawn_builder{"t"}.channel_name("b").spawn(*conn)->id;
  auto q = poller();
  CAF_REQUIRE_EQUAL(claim_or_throw(*q, request({"t"})).tasks.size(), 1u);
  age_task(*conn, id, 3600);
  auto req = request({"t"});
  req.paused = {"b"};
  CAF_CHECK(claim_or_throw(*q, req).tasks.empty());
  auto batch = claim_or_throw(*q, request({"t"}));
  CAF_REQUIRE_EQUAL(batch.tasks.size(), 1u);
  CAF_CHECK_EQUAL(batch.tasks[0].attempt, 2);
}

CAF_TEST(pausing every channel claims nothing) {
  spawn_in(*conn, {"a", "b"}, 3);
  spawn_in(*conn, {"o"}, 3, true);
  auto q = poller();
  auto req = request({"t"});
  // From a cursor in the middle of the walk too: it wraps around.
  req.limit = 1;
  CAF_REQUIRE_EQUAL(claim_or_throw(*q, req).tasks.size(), 1u);
  auto at = q->cursor().channel_name;
  CAF_REQUIRE(at.has_value());
  req.paused = {"o", "b", "a"};
  for (int limit : {1, 32}) {
    req.limit = limit;
    auto batch = claim_or_throw(*q, req);
    CAF_CHECK(batch.tasks.empty());
    CAF_CHECK(q->cursor().channel_name == at);
  }
}

CAF_TEST(a claim does not read the backlog of a paused channel) {
  // Older than the backlog: first in queue order.
  spawn_in(*conn, {"small"}, 5);
  insert_backlog(*conn, "big", 100000);
  auto read = tasks_read(*conn, [](pqxx::transaction_base& tx) {
    auto rows = tx.exec("SELECT * FROM cafmq.claim('n', '{t}', NULL, "
                        "'{big}', 32, '30 s', 5, NULL, NULL) "
                        "WHERE id IS NOT NULL");
    CAF_CHECK_EQUAL(rows.size(), 5u);
  });
  // A few per claimed task, not one per task of the paused backlog (the
  // fill of the batch must not walk the queue past it).
  CAF_MESSAGE("the claim read " << read << " rows of cafmq.tasks");
  CAF_CHECK_LESS(read, 1000);
}

CAF_TEST_FIXTURE_SCOPE_END()
