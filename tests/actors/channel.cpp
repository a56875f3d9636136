// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE channel
#include <caf/test/dsl.hpp>

#include "cafmq/actors/detail/channel.hpp"
#include "support/stand_ins.hpp"

using namespace caf;
using namespace cafmq;
using namespace cafmq::actors;
using namespace cafmq::test;
using namespace std::chrono_literals;

namespace {

struct channel_fixture : unit_fixture {
  channel_fixture() {
    cfg.channel_idle_timeout = 10s;
  }

  void start(bool paused = false) {
    chan = keep(spawn_channel(sys, context(), key, disp, pool, router,
                              completer, keeper, paused));
  }

  // Claims `n` attempts of task "ok" for the channel.
  std::vector<claimed_task> claim(int n, bool ordered = false) {
    std::vector<claimed_task> xs;
    for (int i = 0; i < n; ++i) {
      xs.push_back(make_task("ok"));
      xs.back().ordered = ordered;
    }
    anon_send(chan, run_atom::value, xs);
    sched.run();
    return xs;
  }

  void done(std::vector<task_outcome> xs) {
    anon_send(chan, done_atom::value, std::move(xs));
    sched.run();
  }

  // The completer tells the channel that `xs` are written, as `as`.
  void written(const std::vector<attempt_ref>& xs,
               written_as as = written_as::completed) {
    std::vector<written_attempt> told;
    for (auto& x : xs)
      told.push_back({x, as});
    anon_send(chan, written_atom::value, std::move(told));
    sched.run();
  }

  // The attempts the channel told the keeper to renew.
  std::set<uuid> held() {
    sched.run();
    auto& refs = deref<lease_keeper_stand_in>(keeper).state.held;
    return ids_of(std::vector<attempt_ref>{refs.begin(), refs.end()});
  }

  dispatcher_log& dispatcher_seen() {
    return deref<dispatcher_stand_in>(disp).state;
  }

  runner_log& pool_seen(const pool_actor& x) {
    return deref<pool_stand_in>(x).state;
  }

  runner_log& pool_seen() {
    return pool_seen(pool);
  }

  runner_log& router_seen(const router_actor& x) {
    return deref<router_stand_in>(x).state;
  }

  runner_log& router_seen() {
    return router_seen(router);
  }

  completer_log& completer_seen(const completer_actor& x) {
    return deref<completer_stand_in>(x).state;
  }

  completer_log& completer_seen() {
    return completer_seen(completer);
  }

  // Everything the dispatcher heard, summed.
  finished_counts heard() {
    finished_counts sum;
    for (auto& [k, x] : dispatcher_seen().done) {
      CAF_CHECK_EQUAL(k, key);
      sum.completed += x.completed;
      sum.failed += x.failed;
      sum.released += x.released;
      sum.recorded += x.recorded;
    }
    return sum;
  }

  // True if the channel actor has quit.
  bool gone() {
    auto result = false;
    self->receive([&](const down_msg& dm) { result = dm.source == chan; },
                  after(0s) >> [] {});
    return result;
  }

  std::string key = "default\x1f";
  dispatcher_actor disp = stand_in(stand_in_dispatcher);
  pool_actor pool = stand_in(stand_in_pool);
  router_actor router = stand_in(stand_in_router);
  completer_actor completer = stand_in(stand_in_completer);
  lease_keeper_actor keeper = stand_in(stand_in_lease_keeper);
  channel_actor chan;
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(channel_tests, channel_fixture)

CAF_TEST(attempts go to the pool in claim order in one message per pump) {
  start();
  auto first = claim(3);
  CAF_REQUIRE_EQUAL(pool_seen().runs.size(), 1u);
  CAF_CHECK_EQUAL(refs_of(pool_seen().runs[0]), refs_of(first));
  // The pool gets the payload with the attempt.
  CAF_CHECK_EQUAL(*pool_seen().runs[0][0].payload_json, "null");
  auto second = claim(2);
  CAF_REQUIRE_EQUAL(pool_seen().runs.size(), 2u);
  CAF_CHECK_EQUAL(refs_of(pool_seen().runs[1]), refs_of(second));
}

CAF_TEST(channel concurrency limits how many attempts run) {
  cfg.channel_concurrency = 2;
  start();
  auto xs = claim(5);
  CAF_REQUIRE_EQUAL(pool_seen().runs.size(), 1u);
  CAF_CHECK_EQUAL(refs_of(pool_seen().runs[0]),
                  (std::vector<attempt_ref>{ref_of(xs[0]), ref_of(xs[1])}));
  // One slot frees: the next in claim order starts, alone.
  done({outcome(xs[1], task_outcome::completed)});
  CAF_REQUIRE_EQUAL(pool_seen().runs.size(), 2u);
  CAF_CHECK_EQUAL(refs_of(pool_seen().runs[1]),
                  std::vector<attempt_ref>{ref_of(xs[2])});
  // Written outcomes free no slot: they left them already.
  written({ref_of(xs[1])});
  CAF_CHECK_EQUAL(pool_seen().runs.size(), 2u);
  done({outcome(xs[0], task_outcome::completed),
        outcome(xs[2], task_outcome::failed, "no")});
  CAF_REQUIRE_EQUAL(pool_seen().runs.size(), 3u);
  CAF_CHECK_EQUAL(refs_of(pool_seen().runs[2]),
                  (std::vector<attempt_ref>{ref_of(xs[3]), ref_of(xs[4])}));
}

CAF_TEST(two ordered attempts never run at once) {
  start();
  auto xs = claim(2, true);
  CAF_REQUIRE_EQUAL(pool_seen().runs.size(), 1u);
  CAF_CHECK_EQUAL(refs_of(pool_seen().runs[0]),
                  std::vector<attempt_ref>{ref_of(xs[0])});
  // A cancel of the first is not its outcome: the second still waits.
  anon_send(chan, cancel_atom::value, xs[0].id, cancel_reason::cancelled);
  sched.run();
  CAF_CHECK_EQUAL(pool_seen().runs.size(), 1u);
  done({outcome(xs[0], task_outcome::failed, "cancelled")});
  CAF_REQUIRE_EQUAL(pool_seen().runs.size(), 2u);
  CAF_CHECK_EQUAL(refs_of(pool_seen().runs[1]),
                  std::vector<attempt_ref>{ref_of(xs[1])});
}

CAF_TEST(a cancel of a queued attempt fails it without the pool) {
  cfg.channel_concurrency = 1;
  start();
  auto xs = claim(2);
  anon_send(chan, cancel_atom::value, xs[1].id, cancel_reason::cancelled);
  sched.run();
  CAF_CHECK_EQUAL(pool_seen().cancels.size(), 0u);
  CAF_CHECK_EQUAL(pool_seen().runs.size(), 1u);
  CAF_REQUIRE_EQUAL(completer_seen().records.size(), 1u);
  auto& records = completer_seen().records[0];
  CAF_REQUIRE_EQUAL(records.size(), 1u);
  check_failed(records[0], xs[1], false);
  CAF_REQUIRE_EQUAL(dispatcher_seen().done.size(), 1u);
  CAF_CHECK_EQUAL(dispatcher_seen().done[0].second.failed, 1);
  CAF_CHECK_EQUAL(dispatcher_seen().done[0].second.total(), 1);
}

CAF_TEST(a cancel of a started attempt goes to the pool) {
  start();
  auto xs = claim(1);
  anon_send(chan, cancel_atom::value, xs[0].id, cancel_reason::cancelled);
  sched.run();
  CAF_REQUIRE_EQUAL(pool_seen().cancels.size(), 1u);
  CAF_CHECK_EQUAL(pool_seen().cancels[0].first, ref_of(xs[0]));
  CAF_CHECK_EQUAL(pool_seen().cancels[0].second, cancel_reason::cancelled);
  CAF_CHECK_EQUAL(completer_seen().records.size(), 0u);
  CAF_CHECK_EQUAL(dispatcher_seen().done.size(), 0u);
}

CAF_TEST(a deadline fires after exactly that much virtual time) {
  cfg.channel_concurrency = 1;
  start();
  auto running = make_task("ok");
  running.deadline_in = 5s;
  auto waiting = make_task("ok");
  waiting.deadline_in = 7s;
  anon_send(chan, run_atom::value, std::vector<claimed_task>{running, waiting});
  sched.run();
  advance(5s - 1us);
  CAF_CHECK_EQUAL(pool_seen().cancels.size(), 0u);
  advance(1us);
  CAF_REQUIRE_EQUAL(pool_seen().cancels.size(), 1u);
  CAF_CHECK_EQUAL(pool_seen().cancels[0].first, ref_of(running));
  CAF_CHECK_EQUAL(pool_seen().cancels[0].second, cancel_reason::deadline);
  // The queued one ends without the pool, failed and retryable (the
  // default filter fails only payload mismatches at once).
  advance(2s - 1us);
  CAF_CHECK_EQUAL(completer_seen().records.size(), 0u);
  advance(1us);
  CAF_CHECK_EQUAL(pool_seen().cancels.size(), 1u);
  CAF_REQUIRE_EQUAL(completer_seen().records.size(), 1u);
  auto& records = completer_seen().records[0];
  CAF_REQUIRE_EQUAL(records.size(), 1u);
  check_failed(records[0], waiting, true);
  CAF_CHECK_NOT_EQUAL(records[0].error.find("past its deadline"),
                      std::string::npos);
}

CAF_TEST(lost leases end queued attempts with nothing to write) {
  cfg.channel_concurrency = 1;
  start();
  auto xs = claim(3);
  anon_send(chan, lost_atom::value, refs_of(xs));
  sched.run();
  // The started one is the pool's to stop; the queued ones end here.
  CAF_REQUIRE_EQUAL(pool_seen().cancels.size(), 1u);
  CAF_CHECK_EQUAL(pool_seen().cancels[0].first, ref_of(xs[0]));
  CAF_CHECK_EQUAL(pool_seen().cancels[0].second, cancel_reason::lost);
  CAF_CHECK_EQUAL(pool_seen().runs.size(), 1u);
  CAF_CHECK_EQUAL(completer_seen().records.size(), 0u);
  CAF_CHECK_EQUAL(heard().recorded, 2);
  CAF_CHECK_EQUAL(heard().total(), 2);
  CAF_CHECK_EQUAL(held(), std::set<uuid>{xs[0].id});
}

CAF_TEST(outcomes go to the completer and the dispatcher hears the counts) {
  start();
  auto xs = claim(5);
  done({outcome(xs[0], task_outcome::completed),
        outcome(xs[1], task_outcome::failed, "boom"),
        outcome(xs[2], task_outcome::released),
        outcome(xs[3], task_outcome::recorded),
        outcome(xs[4], task_outcome::completed)});
  CAF_REQUIRE_EQUAL(completer_seen().records.size(), 1u);
  auto& records = completer_seen().records[0];
  CAF_CHECK_EQUAL(refs_of(records),
                  (std::vector<attempt_ref>{ref_of(xs[0]), ref_of(xs[1]),
                                            ref_of(xs[2]), ref_of(xs[4])}));
  CAF_CHECK_EQUAL(records[1].kind, task_outcome::failed);
  CAF_CHECK_EQUAL(records[1].error, "boom");
  CAF_CHECK_EQUAL(records[2].kind, task_outcome::released);
  CAF_REQUIRE_EQUAL(dispatcher_seen().done.size(), 1u);
  auto& counts = dispatcher_seen().done[0].second;
  CAF_CHECK_EQUAL(dispatcher_seen().done[0].first, key);
  // xs[3] ran and has nothing to write: it completed in its handler's
  // transaction, so it counts as completed (a queued attempt whose lease
  // was lost counts as recorded, see above).
  CAF_CHECK_EQUAL(counts.completed, 3);
  CAF_CHECK_EQUAL(counts.failed, 1);
  CAF_CHECK_EQUAL(counts.released, 1);
  CAF_CHECK_EQUAL(counts.recorded, 0);
  // A second report of the same attempts changes nothing.
  done({outcome(xs[0], task_outcome::completed)});
  CAF_CHECK_EQUAL(completer_seen().records.size(), 1u);
  CAF_CHECK_EQUAL(dispatcher_seen().done.size(), 1u);
}

CAF_TEST(an attempt is forgotten only once its outcome is written) {
  start();
  auto xs = claim(2);
  CAF_CHECK_EQUAL(held(), (std::set<uuid>{xs[0].id, xs[1].id}));
  done({outcome(xs[0], task_outcome::completed),
        outcome(xs[1], task_outcome::completed)});
  CAF_CHECK_EQUAL(held(), (std::set<uuid>{xs[0].id, xs[1].id}));
  written({ref_of(xs[1])});
  CAF_CHECK_EQUAL(held(), std::set<uuid>{xs[0].id});
  written({ref_of(xs[0])});
  CAF_CHECK_EQUAL(held(), std::set<uuid>{});
}

CAF_TEST(a restarted keeper hears every attempt the channel holds) {
  start();
  auto xs = claim(3);
  written({});
  done({outcome(xs[0], task_outcome::completed)});
  written({ref_of(xs[0])});
  auto next = stand_in(stand_in_lease_keeper);
  anon_send(chan, peers_atom::value, next);
  sched.run();
  auto& told = deref<lease_keeper_stand_in>(next).state;
  CAF_CHECK_EQUAL(told.holds, 1);
  CAF_CHECK_EQUAL(
    ids_of(std::vector<attempt_ref>{told.held.begin(), told.held.end()}),
    (std::set<uuid>{xs[1].id, xs[2].id}));
  // The old keeper heard the claim and the ending, the new one the rest.
  CAF_CHECK_EQUAL(held(), (std::set<uuid>{xs[1].id, xs[2].id}));
  done({outcome(xs[1], task_outcome::completed)});
  written({ref_of(xs[1])});
  CAF_CHECK_EQUAL(told.unholds, 1);
  CAF_CHECK_EQUAL(told.held.size(), 1u);
}

CAF_TEST(a written failure makes the channel ask for a claim) {
  start();
  auto xs = claim(2);
  done({outcome(xs[0], task_outcome::completed),
        outcome(xs[1], task_outcome::failed, "boom")});
  written({ref_of(xs[0])});
  CAF_CHECK_EQUAL(dispatcher_seen().rescans, 0);
  written({ref_of(xs[1])});
  CAF_CHECK_EQUAL(dispatcher_seen().rescans, 1);
}

CAF_TEST(pause gives queued attempts back and resume starts new ones) {
  cfg.channel_concurrency = 1;
  start();
  auto xs = claim(3);
  anon_send(chan, pause_atom::value, true);
  sched.run();
  CAF_REQUIRE_EQUAL(completer_seen().records.size(), 1u);
  CAF_CHECK_EQUAL(refs_of(completer_seen().records[0]),
                  (std::vector<attempt_ref>{ref_of(xs[1]), ref_of(xs[2])}));
  for (auto& x : completer_seen().records[0])
    CAF_CHECK_EQUAL(x.kind, task_outcome::released);
  CAF_CHECK_EQUAL(heard().released, 2);
  // The started one runs on; what comes while paused goes back at once.
  CAF_CHECK_EQUAL(pool_seen().cancels.size(), 0u);
  auto late = claim(1);
  CAF_REQUIRE_EQUAL(completer_seen().records.size(), 2u);
  CAF_CHECK_EQUAL(refs_of(completer_seen().records[1]), refs_of(late));
  done({outcome(xs[0], task_outcome::completed)});
  CAF_CHECK_EQUAL(pool_seen().runs.size(), 1u);
  anon_send(chan, pause_atom::value, false);
  sched.run();
  auto next = claim(1);
  CAF_REQUIRE_EQUAL(pool_seen().runs.size(), 2u);
  CAF_CHECK_EQUAL(refs_of(pool_seen().runs[1]), refs_of(next));
}

CAF_TEST(a channel spawned paused gives back what it gets) {
  start(true);
  auto xs = claim(1);
  CAF_CHECK_EQUAL(pool_seen().runs.size(), 0u);
  CAF_REQUIRE_EQUAL(completer_seen().records.size(), 1u);
  CAF_CHECK_EQUAL(completer_seen().records[0][0].kind, task_outcome::released);
}

CAF_TEST(stop gives back queued attempts) {
  cfg.channel_concurrency = 1;
  start();
  auto xs = claim(2);
  anon_send(chan, stop_atom::value);
  sched.run();
  CAF_REQUIRE_EQUAL(completer_seen().records.size(), 1u);
  auto& records = completer_seen().records[0];
  CAF_REQUIRE_EQUAL(records.size(), 1u);
  CAF_CHECK_EQUAL(records[0].ref, ref_of(xs[1]));
  CAF_CHECK_EQUAL(records[0].kind, task_outcome::released);
  // The started one runs to its end and its outcome is written; nothing
  // starts any more.
  CAF_CHECK_EQUAL(pool_seen().cancels.size(), 0u);
  auto late = claim(1);
  done({outcome(xs[0], task_outcome::completed)});
  CAF_CHECK_EQUAL(pool_seen().runs.size(), 1u);
  CAF_REQUIRE_EQUAL(completer_seen().records.size(), 3u);
  CAF_CHECK_EQUAL(refs_of(completer_seen().records[1]), refs_of(late));
  CAF_CHECK_EQUAL(completer_seen().records[1][0].kind, task_outcome::released);
  CAF_CHECK_EQUAL(completer_seen().records[2][0].kind, task_outcome::completed);
}

CAF_TEST(abandon cancels the started attempts through the pool) {
  cfg.channel_concurrency = 1;
  start();
  auto xs = claim(2);
  anon_send(chan, stop_atom::value);
  anon_send(chan, abandon_atom::value);
  sched.run();
  CAF_REQUIRE_EQUAL(pool_seen().cancels.size(), 1u);
  CAF_CHECK_EQUAL(pool_seen().cancels[0].first, ref_of(xs[0]));
  CAF_CHECK_EQUAL(pool_seen().cancels[0].second, cancel_reason::shutdown);
  CAF_REQUIRE_EQUAL(completer_seen().records.size(), 1u);
  CAF_CHECK_EQUAL(refs_of(completer_seen().records[0]),
                  std::vector<attempt_ref>{ref_of(xs[1])});
}

CAF_TEST(a new completer gets the outcomes not yet written) {
  start();
  auto xs = claim(3);
  done({outcome(xs[0], task_outcome::completed),
        outcome(xs[1], task_outcome::failed, "boom")});
  written({ref_of(xs[0])});
  auto next = stand_in(stand_in_completer);
  anon_send(chan, peers_atom::value, next);
  sched.run();
  CAF_REQUIRE_EQUAL(completer_seen(next).records.size(), 1u);
  auto& again = completer_seen(next).records[0];
  CAF_REQUIRE_EQUAL(again.size(), 1u);
  CAF_CHECK_EQUAL(again[0].ref, ref_of(xs[1]));
  CAF_CHECK_EQUAL(again[0].kind, task_outcome::failed);
  CAF_CHECK_EQUAL(again[0].error, "boom");
  // Later outcomes go to the new one only.
  done({outcome(xs[2], task_outcome::completed)});
  CAF_CHECK_EQUAL(completer_seen().records.size(), 1u);
  CAF_REQUIRE_EQUAL(completer_seen(next).records.size(), 2u);
  CAF_CHECK_EQUAL(refs_of(completer_seen(next).records[1]),
                  std::vector<attempt_ref>{ref_of(xs[2])});
}

CAF_TEST(a new pool fails the attempts the old one ran) {
  cfg.channel_concurrency = 1;
  start();
  auto xs = claim(2);
  auto next = stand_in(stand_in_pool);
  anon_send(chan, peers_atom::value, next);
  sched.run();
  CAF_REQUIRE_EQUAL(completer_seen().records.size(), 1u);
  auto& records = completer_seen().records[0];
  CAF_REQUIRE_EQUAL(records.size(), 1u);
  check_failed(records[0], xs[0], true);
  CAF_CHECK_EQUAL(records[0].error,
                  "the worker pool crashed while the attempt ran");
  CAF_CHECK_EQUAL(heard().failed, 1);
  // Its slot is free: the queued one starts on the new pool.
  CAF_CHECK_EQUAL(pool_seen().runs.size(), 1u);
  CAF_REQUIRE_EQUAL(pool_seen(next).runs.size(), 1u);
  CAF_CHECK_EQUAL(refs_of(pool_seen(next).runs[0]),
                  std::vector<attempt_ref>{ref_of(xs[1])});
}

CAF_TEST(names no handler here runs go to the router and its cancels too) {
  start();
  std::vector<claimed_task> xs{make_task("ok"), make_task("remote"),
                               make_task("remote")};
  anon_send(chan, run_atom::value, xs);
  sched.run();
  CAF_REQUIRE_EQUAL(pool_seen().runs.size(), 1u);
  CAF_CHECK_EQUAL(refs_of(pool_seen().runs[0]),
                  std::vector<attempt_ref>{ref_of(xs[0])});
  CAF_REQUIRE_EQUAL(router_seen().runs.size(), 1u);
  CAF_CHECK_EQUAL(refs_of(router_seen().runs[0]),
                  (std::vector<attempt_ref>{ref_of(xs[1]), ref_of(xs[2])}));
  // A cancel goes where the attempt runs.
  anon_send(chan, cancel_atom::value, xs[1].id, cancel_reason::cancelled);
  anon_send(chan, cancel_atom::value, xs[0].id, cancel_reason::cancelled);
  sched.run();
  CAF_REQUIRE_EQUAL(router_seen().cancels.size(), 1u);
  CAF_CHECK_EQUAL(router_seen().cancels[0].first, ref_of(xs[1]));
  CAF_REQUIRE_EQUAL(pool_seen().cancels.size(), 1u);
  CAF_CHECK_EQUAL(pool_seen().cancels[0].first, ref_of(xs[0]));
  // A new router fails what the old one ran, and only that.
  anon_send(chan, peers_atom::value, stand_in(stand_in_router));
  sched.run();
  CAF_REQUIRE_EQUAL(completer_seen().records.size(), 1u);
  auto& records = completer_seen().records[0];
  CAF_REQUIRE_EQUAL(records.size(), 2u);
  for (auto& x : records)
    CAF_CHECK_EQUAL(x.error, "the worker router crashed while the attempt ran");
  CAF_CHECK_EQUAL(ids_of(refs_of(records)), ids_of(std::vector<attempt_ref>{
                                              ref_of(xs[1]), ref_of(xs[2])}));
}

CAF_TEST(an idle channel retires only when the dispatcher agrees) {
  start();
  self->monitor(chan);
  auto xs = claim(1);
  done({outcome(xs[0], task_outcome::completed)});
  written({ref_of(xs[0])});
  // Work that comes before the timeout keeps it.
  advance(5s);
  auto more = claim(1);
  advance(5s);
  CAF_CHECK_EQUAL(dispatcher_seen().retires.size(), 0u);
  done({outcome(more[0], task_outcome::completed)});
  written({ref_of(more[0])});
  dispatcher_seen().retire = false;
  advance(10s - 1us);
  CAF_CHECK_EQUAL(dispatcher_seen().retires.size(), 0u);
  advance(1us);
  CAF_CHECK_EQUAL(dispatcher_seen().retires, std::vector<std::string>{key});
  CAF_CHECK(!gone());
  // Busy and idle again; this time the dispatcher agrees.
  auto last = claim(1);
  done({outcome(last[0], task_outcome::completed)});
  written({ref_of(last[0])});
  dispatcher_seen().retire = true;
  advance(10s);
  CAF_CHECK_EQUAL(dispatcher_seen().retires.size(), 2u);
  CAF_CHECK(gone());
}

CAF_TEST(an attempt given back and claimed again before its write is confirmed
           runs again) {
  // A release keeps the attempt's number, so the task's next claim comes
  // back as the same attempt; under load it can reach the channel before
  // the completer's confirmation of the release.
  start();
  auto xs = claim(1);
  CAF_REQUIRE_EQUAL(pool_seen().runs.size(), 1u);
  done({outcome(xs[0], task_outcome::released)});
  CAF_REQUIRE_EQUAL(completer_seen().records.size(), 1u);
  anon_send(chan, run_atom::value, xs);
  sched.run();
  CAF_REQUIRE_EQUAL(pool_seen().runs.size(), 2u);
  CAF_CHECK_EQUAL(pool_seen().runs[1].at(0).id, xs[0].id);
  CAF_CHECK_EQUAL(held(), std::set<uuid>{xs[0].id});
  // It completes, and the release's late confirmation is not taken for its
  // write: that one still goes out, and the attempt stays held until it is
  // confirmed.
  done({outcome(xs[0], task_outcome::completed)});
  written({ref_of(xs[0])}, written_as::released);
  CAF_REQUIRE_EQUAL(completer_seen().records.size(), 2u);
  CAF_CHECK_EQUAL(completer_seen().records[1].at(0).kind,
                  task_outcome::completed);
  CAF_CHECK_EQUAL(held(), std::set<uuid>{xs[0].id});
  written({ref_of(xs[0])});
  CAF_CHECK(held().empty());
  CAF_CHECK_EQUAL(heard().released, 1);
  CAF_CHECK_EQUAL(heard().completed, 1);
}

CAF_TEST_FIXTURE_SCOPE_END()
