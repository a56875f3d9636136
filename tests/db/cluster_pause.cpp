// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE cluster_pause
#include <caf/test/unit_test.hpp>

#include <set>

#include "cafmq/admin.hpp"
#include "support/db_fixture.hpp"
#include "support/queue_helpers.hpp"

using namespace cafmq;
using namespace cafmq::test;

namespace {

std::set<std::string> channel_set_of(const claim_result& x) {
  std::set<std::string> result;
  for (const auto& t : x.tasks)
    result.insert(t.channel_name);
  return result;
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(cluster_pause_tests, db_fixture)

CAF_TEST(a paused channel is claimed by no runner until resumed) {
  for (int i = 0; i < 3; ++i) {
    spawn_builder{"t"}.channel_name("mail").spawn(*conn);
    spawn_builder{"t"}.channel_name("sms").spawn(*conn);
  }
  CAF_CHECK_EQUAL(pause(*conn, pause_kind::channel, "mail"), true);
  CAF_CHECK_EQUAL(pause(*conn, pause_kind::channel, "mail"), false);
  // Two runners, each with a connection of its own and no pause of its own.
  auto q1 = poller();
  auto q2 = poller();
  auto a = claim_or_throw(*q1, request({"t"}, 2));
  auto b = claim_or_throw(*q2, request({"t"}, 10));
  CAF_CHECK_EQUAL(a.tasks.size() + b.tasks.size(), 3u);
  CAF_CHECK(channel_set_of(a) == std::set<std::string>{"sms"});
  CAF_CHECK(channel_set_of(b) == std::set<std::string>{"sms"});
  CAF_CHECK(claim_or_throw(*q1, request({"t"})).tasks.empty());
  auto xs = pauses(*conn);
  CAF_REQUIRE(xs && xs->size() == 1u);
  CAF_CHECK(xs->at(0).kind == pause_kind::channel);
  CAF_CHECK_EQUAL(xs->at(0).value, "mail");
  // Resumed, its tasks run again.
  CAF_CHECK_EQUAL(resume(*conn, pause_kind::channel, "mail"), true);
  CAF_CHECK_EQUAL(resume(*conn, pause_kind::channel, "mail"), false);
  auto c = claim_or_throw(*q2, request({"t"}, 10));
  CAF_CHECK_EQUAL(c.tasks.size(), 3u);
  CAF_CHECK(channel_set_of(c) == std::set<std::string>{"mail"});
}

CAF_TEST(a paused task name is not claimed while others of its channel are) {
  auto t = spawn_builder{"t"}.spawn(*conn)->id;
  auto u = spawn_builder{"u"}.spawn(*conn)->id;
  CAF_REQUIRE(pause(*conn, pause_kind::task, "t"));
  auto q = poller();
  auto a = claim_or_throw(*q, request({"t", "u"}));
  CAF_REQUIRE_EQUAL(a.tasks.size(), 1u);
  CAF_CHECK(a.tasks[0].id == u);
  CAF_CHECK(claim_or_throw(*q, request({"t"})).tasks.empty());
  CAF_REQUIRE(resume(*conn, pause_kind::task, "t"));
  auto b = claim_or_throw(*q, request({"t", "u"}));
  CAF_REQUIRE_EQUAL(b.tasks.size(), 1u);
  CAF_CHECK(b.tasks[0].id == t);
}

CAF_TEST(a running task of a paused channel finishes) {
  auto id = spawn_builder{"t"}.channel_name("mail").spawn(*conn)->id;
  auto q = poller();
  auto a = claim_or_throw(*q, request({"t"}));
  CAF_REQUIRE_EQUAL(a.tasks.size(), 1u);
  CAF_REQUIRE(pause(*conn, pause_kind::channel, "mail"));
  auto done = q->complete(std::vector<attempt_ref>{{id, a.tasks[0].attempt}});
  CAF_REQUIRE(done);
  CAF_CHECK_EQUAL(done->size(), 1u);
  CAF_CHECK_EQUAL(state_of(*conn, id), "completed");
}

CAF_TEST(a pause of an unknown kind is refused) {
  auto refused = false;
  try {
    pqxx::work tx{*conn};
    tx.exec("SELECT cafmq.pause('queue', 'x')");
  } catch (const pqxx::sql_error& e) {
    refused = std::string{e.what()}.find("kind must be channel or task")
              != std::string::npos;
  }
  CAF_CHECK(refused);
  CAF_CHECK(pauses(*conn)->empty());
}

CAF_TEST_FIXTURE_SCOPE_END()
