// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE web_series
#include <caf/test/unit_test.hpp>

#include <chrono>

#include "series.hpp"

using namespace cafmq;
using namespace cafmq::web;
using namespace std::chrono;

namespace web_series_impl {

queue_stat live(std::string channel, task_state state, std::int64_t tasks,
                std::int64_t ready = 0,
                std::optional<microseconds> oldest = std::nullopt) {
  queue_stat x;
  x.channel_name = std::move(channel);
  x.state = state;
  x.tasks = tasks;
  x.ready = ready;
  x.oldest_pending_age = oldest;
  return x;
}

task_status::time_point at(int seconds) {
  return task_status::time_point{} + hours{24 * 365 * 56} + seconds * 1s;
}

// A sample at `seconds` with these live counts, and per window of `ring`'s
// bounds these finished counts.
queue_sample sample_at(int seconds, std::vector<queue_stat> live_counts,
                       std::vector<finished_counts> finished = {}) {
  queue_sample s;
  s.at = at(seconds);
  s.live = std::move(live_counts);
  s.finished = std::move(finished);
  return s;
}

struct fixture {};
} // namespace web_series_impl

using namespace web_series_impl;

CAF_TEST_FIXTURE_SCOPE(web_series_tests, web_series_impl::fixture)

CAF_TEST(the first point has counts but no rates) {
  series_ring ring{10};
  CAF_CHECK(ring.bounds().empty());
  ring.add({},
           sample_at(0, {live("mail", task_state::pending, 30, 20, 5s),
                         live("mail", task_state::running, 4)}),
           std::nullopt);
  auto p = ring.points().at(0);
  CAF_CHECK_EQUAL(p.seconds, 0.0);
  CAF_CHECK_EQUAL(p.completed, 0);
  CAF_CHECK_EQUAL(p.spawned, 0);
  CAF_CHECK_EQUAL(p.live, 34);
  CAF_CHECK_EQUAL(p.ready, 20);
  CAF_CHECK(p.oldest_pending == microseconds{5s});
  CAF_CHECK(!p.handlers);
}

CAF_TEST(spawned counts the change in live tasks plus those that finished) {
  series_ring ring{10};
  ring.add({}, sample_at(0, {live("mail", task_state::pending, 100, 100)}),
           std::nullopt);
  // 10 s later: 50 completed, 5 failed, 5 cancelled; 40 new ones came.
  auto b = ring.bounds();
  CAF_REQUIRE_EQUAL(b.size(), 1u);
  CAF_CHECK(b[0] == at(0));
  ring.add(b,
           sample_at(10,
                     {live("mail", task_state::pending, 70, 60),
                      live("mail", task_state::running, 10),
                      live("mail", task_state::uncommitted, 0)},
                     {{50, 5, 5}}),
           handler_occupancy{10, 32});
  auto p1 = ring.points().at(1);
  CAF_CHECK_EQUAL(p1.seconds, 10.0);
  CAF_CHECK_EQUAL(p1.completed, 50);
  CAF_CHECK_EQUAL(p1.failed, 5);
  CAF_CHECK_EQUAL(p1.cancelled, 5);
  CAF_CHECK_EQUAL(p1.live, 80);
  CAF_CHECK_EQUAL(p1.spawned, 80 - 100 + 60);
  CAF_REQUIRE(p1.handlers);
  CAF_CHECK_EQUAL(p1.handlers->running, 10);
  CAF_CHECK_EQUAL(p1.handlers->slots, 32);
  // Expired reservations shrink the live count without finishing: never
  // a negative spawn count.
  b = ring.bounds();
  ring.add(b, sample_at(20, {}, {{50, 5, 5}, {0, 0, 0}}), std::nullopt);
  auto p2 = ring.points().at(2);
  CAF_CHECK_EQUAL(p2.spawned, 0);
  // A clock that went back (another database after a failover) counts
  // nothing rather than a rate over a negative interval.
  b = ring.bounds();
  ring.add(b, sample_at(15, {}, {{50, 5, 5}, {0, 0, 0}, {7, 0, 0}}),
           std::nullopt);
  auto p3 = ring.points().at(3);
  CAF_CHECK_EQUAL(p3.seconds, 0.0);
  CAF_CHECK_EQUAL(p3.completed, 0);
}

CAF_TEST(an ending written late counts in its window at the next sample) {
  series_ring ring{10};
  ring.add({}, sample_at(0, {live("", task_state::running, 3)}), std::nullopt);
  auto b = ring.bounds();
  ring.add(b, sample_at(5, {live("", task_state::running, 2)}, {{1, 0, 0}}),
           std::nullopt);
  // A completion that started before the second sample committed after
  // it: the third sample counts two in the first window.
  b = ring.bounds();
  CAF_REQUIRE_EQUAL(b.size(), 2u);
  ring.add(b, sample_at(10, {}, {{2, 0, 0}, {0, 0, 0}}), std::nullopt);
  auto xs = ring.points();
  CAF_CHECK_EQUAL(xs[1].completed, 2);
  CAF_CHECK_EQUAL(xs[1].spawned, 1);
  CAF_CHECK_EQUAL(xs[2].completed, 0);
  CAF_CHECK_EQUAL(xs[2].spawned, 0);
  // Points older than the recount window keep their counts.
  series_ring short_memory{10, 7s};
  short_memory.add({}, sample_at(0, {}), std::nullopt);
  short_memory.add(short_memory.bounds(), sample_at(5, {}, {{1, 0, 0}}),
                   std::nullopt);
  short_memory.add(short_memory.bounds(),
                   sample_at(10, {}, {{2, 0, 0}, {0, 0, 0}}), std::nullopt);
  b = short_memory.bounds();
  CAF_REQUIRE_EQUAL(b.size(), 2u);
  CAF_CHECK(b[0] == at(5));
}

CAF_TEST(channels are the busiest by ready tasks and the rest only count) {
  series_ring ring{10, minutes{1}, 2};
  ring.add({},
           sample_at(0, {live("a", task_state::pending, 5, 5, 1s),
                         live("b", task_state::pending, 50, 40, 9s),
                         live("b", task_state::running, 8),
                         live("c", task_state::pending, 5, 5, 3s),
                         live("d", task_state::pending, 9, 0),
                         live("e", task_state::pending, 1, 1, 60s)}),
           std::nullopt);
  auto p = ring.points().at(0);
  CAF_REQUIRE_EQUAL(p.channels.size(), 2u);
  CAF_CHECK_EQUAL(p.channels[0].name, "b");
  CAF_CHECK_EQUAL(p.channels[0].ready, 40);
  // a and c tie on ready tasks: the one waiting longer first.
  CAF_CHECK_EQUAL(p.channels[1].name, "c");
  CAF_CHECK_EQUAL(p.ready, 51);
  CAF_CHECK(p.oldest_pending == microseconds{60s});
  CAF_CHECK_EQUAL(p.live, 78);
}

CAF_TEST(the ring keeps the last points in order) {
  series_ring ring{3};
  for (int i = 0; i < 5; ++i)
    ring.add(ring.bounds(),
             sample_at(i, {live("", task_state::pending, i)},
                       std::vector<finished_counts>(ring.bounds().size())),
             std::nullopt);
  auto xs = ring.points();
  CAF_REQUIRE_EQUAL(xs.size(), 3u);
  CAF_CHECK_EQUAL(xs[0].live, 2);
  CAF_CHECK_EQUAL(xs[2].live, 4);
  CAF_CHECK_EQUAL(xs[2].spawned, 1);
}

CAF_TEST(a point in JSON has the fields the page reads) {
  series_ring ring{3};
  ring.add({}, sample_at(0, {live("mail", task_state::pending, 3, 3, 1500ms)}),
           handler_occupancy{1, 8});
  auto j = to_json(ring.points().at(0));
  for (auto key :
       {"at", "seconds", "spawned", "completed", "failed", "cancelled", "live",
        "ready", "oldest_pending_ms", "channels", "handlers"})
    if (!j.contains(key))
      CAF_FAIL("the point lacks " << key);
  CAF_CHECK_EQUAL(j["oldest_pending_ms"].get<std::int64_t>(), 1500);
  CAF_CHECK_EQUAL(j["channels"][0]["channel"].get<std::string>(), "mail");
  CAF_CHECK_EQUAL(j["handlers"]["slots"].get<std::int64_t>(), 8);
  series_ring other{3};
  other.add({}, sample_at(0, {}), std::nullopt);
  CAF_CHECK(to_json(other.points().at(0))["handlers"].is_null());
}

CAF_TEST_FIXTURE_SCOPE_END()
