// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE keeper
#include <caf/test/dsl.hpp>

#include "cafmq/actors/detail/keeper.hpp"
#include "support/stand_ins.hpp"

using namespace caf;
using namespace cafmq;
using namespace cafmq::actors;
using namespace cafmq::test;
using namespace std::chrono_literals;

namespace {

struct keeper_fixture : unit_fixture {
  keeper_fixture() {
    keeper = keep(spawn_keeper(sys, ctx, db));
    hold(first, {ref_of(a), ref_of(b)});
    hold(second, {ref_of(c)});
  }

  // `owner` tells the keeper it holds `refs`.
  void hold(const channel_actor& owner, std::vector<attempt_ref> refs) {
    send_as(owner, keeper, hold_atom::value, std::move(refs));
    sched.run();
  }

  // `owner` tells the keeper that `refs` ended.
  void unhold(const channel_actor& owner, std::vector<attempt_ref> refs) {
    send_as(owner, keeper, unhold_atom::value, std::move(refs));
    sched.run();
  }

  channel_log& channel_seen(const channel_actor& x) {
    return deref<channel_stand_in>(x).state;
  }

  // The counters the keeper adds to (the runtime's metrics).
  runtime_totals stats() {
    return ctx->metrics->totals();
  }

  using cancels = std::vector<std::pair<uuid, cancel_reason>>;

  context_ptr ctx = context();
  database_actor db = stand_in_db(log);
  channel_actor first = stand_in(stand_in_channel);
  channel_actor second = stand_in(stand_in_channel);
  keeper_actor keeper;
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(keeper_tests, keeper_fixture)

CAF_TEST(every interval one renewal holds the attempts every channel holds) {
  advance(10s - 1us);
  CAF_CHECK_EQUAL(log->renewals.size(), 0u);
  advance(1us);
  CAF_REQUIRE_EQUAL(log->renewals.size(), 1u);
  CAF_CHECK_EQUAL(log->renewals[0].size(), 3u);
  CAF_CHECK_EQUAL(ids_of(log->renewals[0]), (std::set<uuid>{a.id, b.id, c.id}));
  advance(10s);
  CAF_CHECK_EQUAL(log->renewals.size(), 2u);
  // Everything was renewed: no channel hears anything.
  for (auto& x : {first, second}) {
    CAF_CHECK_EQUAL(channel_seen(x).lost.size(), 0u);
    CAF_CHECK_EQUAL(channel_seen(x).cancels.size(), 0u);
  }
}

CAF_TEST(an attempt that ended is not renewed) {
  unhold(first, {ref_of(b)});
  advance(10s);
  CAF_REQUIRE_EQUAL(log->renewals.size(), 1u);
  CAF_CHECK_EQUAL(ids_of(log->renewals[0]), (std::set<uuid>{a.id, c.id}));
}

CAF_TEST(an attempt missing from the answer goes back to its channel as lost) {
  log->not_owned = {b.id, c.id};
  advance(10s);
  CAF_CHECK_EQUAL(channel_seen(first).lost, std::vector<refs>{{ref_of(b)}});
  CAF_CHECK_EQUAL(channel_seen(second).lost, std::vector<refs>{{ref_of(c)}});
  CAF_CHECK_EQUAL(channel_seen(first).cancels.size(), 0u);
  auto counts = stats();
  CAF_CHECK_EQUAL(counts.lost, 2);
  CAF_CHECK_EQUAL(counts.cancels_at_renewal, 0);
  // A lost attempt is not renewed again, and not reported twice.
  advance(10s);
  CAF_REQUIRE_EQUAL(log->renewals.size(), 2u);
  CAF_CHECK_EQUAL(ids_of(log->renewals[1]), std::set<uuid>{a.id});
  CAF_CHECK_EQUAL(channel_seen(first).lost.size(), 1u);
}

CAF_TEST(an attempt written while the renewal ran is not lost) {
  // The renewal waited for the row lock of b's completion and found the
  // row finished: b's channel tells the keeper next that b ended.
  log->ended = {b.id};
  advance(10s);
  CAF_CHECK_EQUAL(channel_seen(first).lost.size(), 0u);
  CAF_CHECK_EQUAL(channel_seen(first).cancels.size(), 0u);
  CAF_CHECK_EQUAL(stats().lost, 0);
  unhold(first, {ref_of(b)});
  advance(10s);
  CAF_REQUIRE_EQUAL(log->renewals.size(), 2u);
  CAF_CHECK_EQUAL(ids_of(log->renewals[1]), (std::set<uuid>{a.id, c.id}));
}

CAF_TEST(a cancel requested at renewal goes to its own channel) {
  log->cancel_requested = {b.id};
  advance(10s);
  CAF_CHECK_EQUAL(channel_seen(first).cancels,
                  (cancels{{b.id, cancel_reason::cancelled}}));
  CAF_CHECK_EQUAL(channel_seen(second).cancels.size(), 0u);
  CAF_CHECK_EQUAL(channel_seen(first).lost.size(), 0u);
  auto counts = stats();
  CAF_CHECK_EQUAL(counts.cancels_at_renewal, 1);
  CAF_CHECK_EQUAL(counts.lost, 0);
}

CAF_TEST(a channel that ended holds nothing) {
  anon_send_exit(second, exit_reason::user_shutdown);
  sched.run();
  advance(10s);
  CAF_REQUIRE_EQUAL(log->renewals.size(), 1u);
  CAF_CHECK_EQUAL(ids_of(log->renewals[0]), (std::set<uuid>{a.id, b.id}));
}

CAF_TEST(no renewal goes out when no channel holds an attempt) {
  unhold(first, {ref_of(a), ref_of(b)});
  unhold(second, {ref_of(c)});
  advance(10s);
  CAF_CHECK_EQUAL(log->renewals.size(), 0u);
}

CAF_TEST(a tick while a renewal is in flight does not start a second one) {
  sched.advance_time(10s);
  expect((tick_atom), from(keeper).to(keeper));
  // The renewal waits for the database; the next tick comes.
  sched.advance_time(10s);
  expect((tick_atom), from(keeper).to(keeper));
  sched.run();
  CAF_CHECK_EQUAL(log->renewals.size(), 1u);
  // Once it ended, the next tick renews again.
  advance(10s);
  CAF_CHECK_EQUAL(log->renewals.size(), 2u);
}

CAF_TEST(a renewal out of turn goes out at once or after the one in flight) {
  anon_send(keeper, renew_atom::value);
  sched.run();
  CAF_REQUIRE_EQUAL(log->renewals.size(), 1u);
  CAF_CHECK_EQUAL(ids_of(log->renewals[0]), (std::set<uuid>{a.id, b.id, c.id}));
  // Asked for while the regular one waits for the database: it follows
  // that one, once.
  sched.advance_time(10s);
  expect((tick_atom), from(keeper).to(keeper));
  anon_send(keeper, renew_atom::value);
  anon_send(keeper, renew_atom::value);
  sched.run();
  CAF_CHECK_EQUAL(log->renewals.size(), 3u);
}

CAF_TEST_FIXTURE_SCOPE_END()
