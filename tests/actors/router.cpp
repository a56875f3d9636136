// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE router
#include <caf/test/dsl.hpp>

#include <csignal>

#include "cafmq/actors/detail/router.hpp"
#include "support/stand_ins.hpp"

using namespace caf;
using namespace cafmq;
using namespace cafmq::actors;
using namespace cafmq::test;
using namespace std::chrono_literals;

namespace {

// The router with joined workers (stand-ins) that offer "remote", a name no
// local handler runs.
struct router_fixture : unit_fixture {
  router_fixture() {
    router = keep(spawn_router(sys, context(), db, started));
    anon_send(router, peers_atom::value, offer_listener_actor{dispatcher});
    sched.run();
  }

  // Joins a stand-in worker; returns it and its port.
  std::pair<worker_actor, worker_link_actor>
  join(std::string node, std::int32_t capacity,
       std::vector<std::string> names = {"remote"}, std::int64_t pid = 0) {
    auto worker = stand_in(stand_in_worker);
    worker_offer offer{std::move(node), std::move(names), capacity, pid};
    self->send(router, join_atom::value, offer, worker);
    sched.run();
    return {worker, answer<worker_link_actor>()};
  }

  std::vector<claimed_task> run(std::vector<std::string> names) {
    std::vector<claimed_task> xs;
    for (auto& name : names)
      xs.push_back(make_task(name));
    send_as(owner, router, run_atom::value, xs);
    sched.run();
    return xs;
  }

  worker_log& seen(const worker_actor& x) {
    return deref<worker_stand_in>(x).state;
  }

  std::vector<task_outcome> owner_done() {
    std::vector<task_outcome> result;
    for (auto& xs : deref<channel_stand_in>(owner).state.done)
      result.insert(result.end(), xs.begin(), xs.end());
    return result;
  }

  std::vector<std::pair<std::vector<std::string>, std::int32_t>>& offers() {
    return deref<dispatcher_stand_in>(dispatcher).state.offers;
  }

  std::shared_ptr<fake_db_log> db_seen = std::make_shared<fake_db_log>();
  database_actor db = stand_in_db(db_seen);
  channel_actor owner = stand_in(stand_in_channel);
  dispatcher_actor dispatcher = stand_in(stand_in_dispatcher);
  router_actor router;
};

using names = std::vector<std::string>;

} // namespace

CAF_TEST_FIXTURE_SCOPE(router_tests, router_fixture)

CAF_TEST(the dispatcher learns what joined workers offer) {
  CAF_CHECK(offers().empty());
  auto [w1, p1] = join("w1", 3, {"remote", "other"});
  auto [w2, p2] = join("w2", 2);
  CAF_REQUIRE_EQUAL(offers().size(), 2u);
  CAF_CHECK_EQUAL(offers()[1].first, names({"other", "remote"}));
  CAF_CHECK_EQUAL(offers()[1].second, 5);
  anon_send_exit(w1, exit_reason::kill);
  sched.run();
  CAF_REQUIRE_EQUAL(offers().size(), 3u);
  CAF_CHECK_EQUAL(offers()[2].first, names({"remote"}));
  CAF_CHECK_EQUAL(offers()[2].second, 2);
  // A restarted dispatcher learns it again.
  auto next = stand_in(stand_in_dispatcher);
  anon_send(router, peers_atom::value, offer_listener_actor{next});
  sched.run();
  auto& told = deref<dispatcher_stand_in>(next).state.offers;
  CAF_REQUIRE_EQUAL(told.size(), 1u);
  CAF_CHECK_EQUAL(told[0].first, names({"remote"}));
  // A worker offering only names this runner runs itself adds nothing: the
  // router never sends them to it.
  auto [w3, p3] = join("w3", 4, {"ok"});
  CAF_REQUIRE_EQUAL(told.size(), 2u);
  CAF_CHECK_EQUAL(told[1].first, names({"remote"}));
  CAF_CHECK_EQUAL(told[1].second, 2);
}

CAF_TEST(the end of a worker process reaches the port of its pid only) {
  auto [w1, p1] = join("w1", 1, {"remote"}, 101);
  auto [w2, p2] = join("w2", 1, {"remote"}, 102);
  auto xs = run({"remote", "remote"});
  anon_send(router, exited_atom::value, std::int64_t{999},
            std::int32_t{SIGABRT});
  sched.run();
  CAF_CHECK(owner_done().empty());
  anon_send(router, exited_atom::value, std::int64_t{102},
            std::int32_t{SIGABRT});
  sched.run();
  auto done = owner_done();
  CAF_REQUIRE_EQUAL(done.size(), 1u);
  CAF_CHECK_EQUAL(done[0].ref, ref_of(xs[1]));
  CAF_CHECK_EQUAL(done[0].error, "worker process w2 (pid 102) was killed by "
                                 "signal 6 (SIGABRT)");
  CAF_CHECK_EQUAL(seen(w1).runs.size(), 1u);
}

CAF_TEST(a worker without capacity or names cannot join) {
  auto worker = stand_in(stand_in_worker);
  self->send(router, join_atom::value, worker_offer{"w", {"remote"}, 0, 0},
             worker);
  self->send(router, join_atom::value, worker_offer{"w", {}, 2, 0}, worker);
  sched.run();
  auto e1 = answer<error>();
  auto e2 = answer<error>();
  CAF_CHECK_EQUAL(code_of(e1), errc::invalid_argument);
  CAF_CHECK(render(e1).find("capacity must be positive") != std::string::npos);
  CAF_CHECK(render(e2).find("offers no task names") != std::string::npos);
  CAF_CHECK(offers().empty());
}

CAF_TEST(attempts go to the least loaded worker in one batch each) {
  std::vector<task_outcome> done;
  auto [w1, p1] = join("w1", 2);
  auto [w2, p2] = join("w2", 2);
  auto xs = run({"remote", "remote", "remote"});
  auto& r1 = seen(w1).runs;
  auto& r2 = seen(w2).runs;
  CAF_REQUIRE_EQUAL(r1.size(), 1u);
  CAF_REQUIRE_EQUAL(r2.size(), 1u);
  CAF_CHECK_EQUAL(refs_of(r1[0]), refs({ref_of(xs[0]), ref_of(xs[2])}));
  CAF_CHECK_EQUAL(refs_of(r2[0]), refs({ref_of(xs[1])}));
  // Placed on a worker counts as started (for takeover).
  CAF_CHECK_EQUAL(started->size(), 3u);
  // A name this process runs itself never goes to a worker (the channel
  // sends it to the pool): it goes back to the queue.
  auto ys = run({"ok"});
  CAF_CHECK_EQUAL(seen(w1).runs.size(), 1u);
  done = owner_done();
  CAF_REQUIRE_EQUAL(done.size(), 1u);
  CAF_CHECK_EQUAL(done[0].ref, ref_of(ys[0]));
  CAF_CHECK_EQUAL(done[0].kind, task_outcome::released);
}

CAF_TEST(a worker holds twice its capacity and the rest waits) {
  auto [w1, p1] = join("w1", 1);
  auto xs = run({"remote", "remote", "remote"});
  // One runs, one is held ahead on the worker (not started: a takeover
  // would give it back, and its timeout has not begun), one waits here.
  CAF_REQUIRE_EQUAL(seen(w1).runs.size(), 1u);
  CAF_CHECK_EQUAL(refs_of(seen(w1).runs[0]),
                  refs({ref_of(xs[0]), ref_of(xs[1])}));
  CAF_CHECK_EQUAL(started->size(), 1u);
  send_as(w1, p1, done_atom::value,
          std::vector<task_outcome>{outcome(xs[0], task_outcome::completed)});
  sched.run();
  CAF_CHECK_EQUAL(refs_of(owner_done()), refs({ref_of(xs[0])}));
  // The one held ahead started when the first ended; the waiting one is
  // held ahead now.
  CAF_CHECK_EQUAL(started->size(), 1u);
  CAF_REQUIRE_EQUAL(seen(w1).runs.size(), 2u);
  CAF_CHECK_EQUAL(refs_of(seen(w1).runs[1]), refs({ref_of(xs[2])}));
  send_as(w1, p1, done_atom::value,
          std::vector<task_outcome>{outcome(xs[1], task_outcome::completed),
                                    outcome(xs[2], task_outcome::completed)});
  sched.run();
  CAF_CHECK_EQUAL(owner_done().size(), 3u);
  CAF_CHECK_EQUAL(started->size(), 0u);
  // A worker that joins takes what waits.
  auto ys = run({"remote", "remote", "remote"});
  auto [w2, p2] = join("w2", 1);
  CAF_REQUIRE_EQUAL(seen(w2).runs.size(), 1u);
  CAF_CHECK_EQUAL(refs_of(seen(w2).runs[0]), refs({ref_of(ys[2])}));
}

CAF_TEST(a cancel of an attempt on a worker reaches the worker) {
  auto [w1, p1] = join("w1", 1);
  auto xs = run({"remote", "remote", "remote"});
  // Running, and held ahead: the worker is told (it takes back one it
  // holds ahead and reports it unstarted).
  for (auto i : {0, 1})
    send_as(owner, router, cancel_atom::value, ref_of(xs[i]),
            cancel_reason::cancelled);
  sched.run();
  CAF_REQUIRE_EQUAL(seen(w1).cancels.size(), 2u);
  CAF_CHECK_EQUAL(seen(w1).cancels[0].first, ref_of(xs[0]));
  CAF_CHECK_EQUAL(seen(w1).cancels[1].first, ref_of(xs[1]));
  // The waiting one ends without running.
  send_as(owner, router, cancel_atom::value, ref_of(xs[2]),
          cancel_reason::cancelled);
  sched.run();
  auto done = owner_done();
  CAF_REQUIRE_EQUAL(done.size(), 1u);
  check_failed(done[0], xs[2], false);
  CAF_CHECK_EQUAL(seen(w1).runs.size(), 1u);
}

CAF_TEST(a lost worker fails what it ran and gives back what it held) {
  auto [w1, p1] = join("w1", 1);
  auto xs = run({"remote", "remote", "remote"});
  anon_send_exit(w1, exit_reason::kill);
  sched.run();
  auto done = owner_done();
  CAF_REQUIRE_EQUAL(done.size(), 3u);
  auto of = [&](const claimed_task& x) {
    return *std::find_if(done.begin(), done.end(),
                         [&](auto& y) { return y.ref == ref_of(x); });
  };
  // It ran the first: failed, retryable. The one it held ahead never
  // started, nor the one waiting here: both go back to the queue.
  check_failed(of(xs[0]), xs[0], true);
  CAF_CHECK(of(xs[0]).error.find("worker node w1 lost") != std::string::npos);
  CAF_CHECK_EQUAL(of(xs[1]).kind, task_outcome::released);
  CAF_CHECK_EQUAL(of(xs[2]).kind, task_outcome::released);
  CAF_CHECK_EQUAL(started->size(), 0u);
  // Its late outcome changes nothing.
  anon_send(p1, done_atom::value,
            std::vector<task_outcome>{outcome(xs[0], task_outcome::completed)});
  sched.run();
  CAF_CHECK_EQUAL(owner_done().size(), 3u);
  // With no worker left, an attempt of the name is given back at once.
  auto ys = run({"remote"});
  // Copied: the check would keep a reference into a temporary.
  done = owner_done();
  CAF_REQUIRE_EQUAL(done.size(), 4u);
  CAF_CHECK_EQUAL(done[3].kind, task_outcome::released);
}

CAF_TEST(a stop gives back what waits and stops the ports) {
  auto [w1, p1] = join("w1", 1);
  auto xs = run({"remote", "remote", "remote"});
  anon_send(router, stop_atom::value);
  sched.run();
  auto done = owner_done();
  CAF_REQUIRE_EQUAL(done.size(), 1u);
  CAF_CHECK_EQUAL(done[0].ref, ref_of(xs[2]));
  CAF_CHECK_EQUAL(done[0].kind, task_outcome::released);
  // The worker gives back what it holds ahead.
  CAF_REQUIRE_EQUAL(seen(w1).cancels.size(), 1u);
  CAF_CHECK_EQUAL(seen(w1).cancels[0].first, ref_of(xs[1]));
  CAF_CHECK_EQUAL(seen(w1).cancels[0].second, cancel_reason::shutdown);
  send_as(w1, p1, done_atom::value,
          std::vector<task_outcome>{outcome(xs[1], task_outcome::released)});
  sched.run();
  // The running attempt ends; then the worker is told to leave.
  CAF_CHECK_EQUAL(seen(w1).stops, 0);
  send_as(w1, p1, done_atom::value,
          std::vector<task_outcome>{outcome(xs[0], task_outcome::completed)});
  sched.run();
  CAF_CHECK_EQUAL(owner_done().size(), 3u);
  CAF_CHECK_EQUAL(seen(w1).stops, 1);
}

CAF_TEST(an owner that ends has its attempts cancelled and their ends dropped) {
  auto [w1, p1] = join("w1", 1);
  auto xs = run({"remote", "remote", "remote"});
  CAF_REQUIRE_EQUAL(seen(w1).runs.size(), 1u);
  anon_send_exit(owner, exit_reason::kill);
  sched.run();
  // Both on the worker, the running one and the one held ahead.
  CAF_REQUIRE_EQUAL(seen(w1).cancels.size(), 2u);
  for (auto& [ref, why] : seen(w1).cancels) {
    CAF_CHECK(ref == ref_of(xs[0]) || ref == ref_of(xs[1]));
    CAF_CHECK_EQUAL(why, cancel_reason::lost);
  }
  // The worker's answers free its slots; the waiting attempt of the dead
  // owner never starts.
  send_as(w1, p1, done_atom::value,
          std::vector<task_outcome>{outcome(xs[0], task_outcome::completed),
                                    outcome(xs[1], task_outcome::released)});
  sched.run();
  CAF_CHECK_EQUAL(seen(w1).runs.size(), 1u);
  // A new owner's attempt takes the free slot.
  owner = stand_in(stand_in_channel);
  auto ys = run({"remote"});
  CAF_REQUIRE_EQUAL(seen(w1).runs.size(), 2u);
  CAF_CHECK_EQUAL(refs_of(seen(w1).runs[1]), refs({ref_of(ys[0])}));
}

CAF_TEST_FIXTURE_SCOPE_END()
