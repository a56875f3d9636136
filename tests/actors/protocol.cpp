// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE protocol
#include <caf/test/dsl.hpp>

#include <caf/all.hpp>

#include "cafmq/actors/detail/protocol.hpp"

using namespace caf;
using namespace cafmq;
using namespace cafmq::actors;
using namespace std::chrono_literals;

namespace {

struct config : actor_system_config {
  config() {
    cafmq::actors::add_message_types(*this);
  }
};

// The test coordinator: no scheduler threads (a real scheduler's shutdown
// confuses ThreadSanitizer inside CAF's uninstrumented library).
struct protocol_fixture : test_coordinator_fixture<config> {

  // Serializes `x` as the middleman does and reads it back.
  template <class T>
  T round_trip(T x) {
    std::vector<char> buf;
    binary_serializer sink{sys, buf};
    if (auto err = sink(x))
      CAF_FAIL("cannot serialize: " << sys.render(err));
    T result;
    binary_deserializer source{sys, buf};
    if (auto err = source(result))
      CAF_FAIL("cannot deserialize: " << sys.render(err));
    return result;
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(protocol_tests, protocol_fixture)

CAF_TEST(every message type has a registered name) {
  auto& names = sys.types();
  for (auto name :
       {"cafmq::uuid", "cafmq::attempt_ref", "cafmq::claimed_task",
        "cafmq::claim_request", "cafmq::claim_result", "cafmq::lease_state",
        "cafmq::checkpoint", "cafmq::cancel_reason", "cafmq::task_status",
        "cafmq::task_outcome", "cafmq::write_batch", "cafmq::finished_counts",
        "cafmq::runner_stats"})
    CAF_CHECK(names.make_value(name) != nullptr);
}

CAF_TEST(a claimed attempt crosses with every field) {
  claimed_task x;
  x.id = uuid::random();
  x.name = "mail";
  x.channel_name = "customer";
  x.channel_args = "42\x1f\xe2\x82\xac";
  x.attempt = 3;
  x.max_attempts = 7;
  x.ordered = true;
  x.timeout = 1500ms;
  x.deadline_in = 9s;
  x.payload_json = R"({"to":"x"})";
  x.payload_bytes = std::string{"\0\1\2", 3};
  auto y = round_trip(x);
  CAF_CHECK(y.id == x.id);
  CAF_CHECK_EQUAL(y.name, x.name);
  CAF_CHECK_EQUAL(y.channel_args, x.channel_args);
  CAF_CHECK_EQUAL(y.attempt, 3);
  CAF_CHECK_EQUAL(y.max_attempts, 7);
  CAF_CHECK(y.ordered);
  CAF_CHECK(y.timeout == x.timeout);
  CAF_CHECK(y.deadline_in == x.deadline_in);
  CAF_CHECK(y.payload_json == x.payload_json);
  CAF_CHECK(y.payload_bytes == x.payload_bytes);
  // Absent optionals stay absent.
  claimed_task bare;
  auto z = round_trip(bare);
  CAF_CHECK(!z.timeout && !z.deadline_in && !z.payload_json
            && !z.payload_bytes);
}

CAF_TEST(claims and checkpoints and statuses cross intact) {
  claim_result r;
  r.tasks.resize(2);
  r.cursor.channel_name = "a";
  r.wait = 250ms;
  auto r2 = round_trip(r);
  CAF_CHECK_EQUAL(r2.tasks.size(), 2u);
  CAF_CHECK(r2.cursor.channel_name == std::optional<std::string>{"a"});
  CAF_CHECK(!r2.cursor.channel_args);
  CAF_CHECK(r2.wait == r.wait);
  claim_request q;
  q.names = {"a", "b"};
  q.paused = {"c"};
  q.max_lost = 2;
  q.ids = {uuid::random(), uuid::random()};
  auto q2 = round_trip(q);
  CAF_CHECK(q2.ids == q.ids);
  CAF_CHECK(q2.names == q.names);
  CAF_CHECK(q2.paused == q.paused);
  CAF_CHECK_EQUAL(q2.max_lost, 2);
  checkpoint cp;
  cp.raw_json("[1]").extra_retries(2).keep_alive(5s);
  auto cp2 = round_trip(cp);
  CAF_CHECK(cp2.raw_json() == cp.raw_json());
  CAF_CHECK(!cp2.bytes());
  CAF_CHECK_EQUAL(cp2.extra_retries(), 2);
  CAF_CHECK(cp2.keep_alive() == cp.keep_alive());
  task_status st;
  st.state = task_state::failed;
  st.last_error = "boom";
  st.finished_at = std::chrono::system_clock::now();
  auto st2 = round_trip(st);
  CAF_CHECK(st2.state == task_state::failed);
  CAF_CHECK(st2.last_error == st.last_error);
  CAF_CHECK(!st2.started_at);
  CAF_CHECK(st2.finished_at == st.finished_at);
  task_outcome o;
  o.ref = {uuid::random(), 2};
  o.kind = task_outcome::released;
  o.error = "e";
  o.retryable = false;
  auto o2 = round_trip(o);
  CAF_CHECK(o2.ref == o.ref);
  CAF_CHECK_EQUAL(o2.kind, task_outcome::released);
  CAF_CHECK(!o2.retryable);
}

CAF_TEST_FIXTURE_SCOPE_END()
