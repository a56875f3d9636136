// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE worker_port
#include <caf/test/dsl.hpp>

#include <csignal>

#include "cafmq/actors/detail/worker_port.hpp"
#include "support/stand_ins.hpp"

using namespace caf;
using namespace cafmq;
using namespace cafmq::actors;
using namespace cafmq::test;
using namespace std::chrono_literals;

namespace {

struct port_fixture : unit_fixture {
  port_fixture() {
    offer.node = "w1";
    offer.names = {"remote"};
    offer.capacity = 4;
    port = spawn_worker_port(sys, context(), offer, worker, router, db);
    sched.run();
  }

  ~port_fixture() override {
    anon_send_exit(port, exit_reason::user_shutdown);
    sched.run();
  }

  worker_log& worker_seen() {
    return deref<worker_stand_in>(worker).state;
  }

  runner_log& router_seen() {
    return deref<router_stand_in>(router).state;
  }

  void send_run(std::vector<claimed_task> xs) {
    send_as(router, port, run_atom::value, std::move(xs));
    sched.run();
  }

  void worker_done(std::vector<task_outcome> xs) {
    send_as(worker, port, done_atom::value, std::move(xs));
    sched.run();
  }

  worker_offer offer;
  std::shared_ptr<fake_db_log> db_seen = std::make_shared<fake_db_log>();
  database_actor db = stand_in_db(db_seen);
  router_actor router = stand_in(stand_in_router);
  worker_actor worker = stand_in(stand_in_worker);
  worker_port_actor port;
};

bool terminated(const worker_port_actor& x) {
  return actor_cast<abstract_actor*>(x)->getf(
    abstract_actor::is_terminated_flag);
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(worker_port_tests, port_fixture)

CAF_TEST(a port forwards each batch to its worker in one message) {
  send_run({a, b});
  send_run({c});
  auto& runs = worker_seen().runs;
  CAF_REQUIRE_EQUAL(runs.size(), 2u);
  CAF_CHECK_EQUAL(refs_of(runs[0]), refs({ref_of(a), ref_of(b)}));
  CAF_CHECK_EQUAL(refs_of(runs[1]), refs({ref_of(c)}));
}

CAF_TEST(a port forwards cancels of the attempts it holds only) {
  send_run({a});
  send_as(router, port, cancel_atom::value, ref_of(a), cancel_reason::timeout);
  send_as(router, port, cancel_atom::value, ref_of(b),
          cancel_reason::cancelled);
  sched.run();
  auto& cancels = worker_seen().cancels;
  CAF_REQUIRE_EQUAL(cancels.size(), 1u);
  CAF_CHECK_EQUAL(cancels[0].first, ref_of(a));
  CAF_CHECK_EQUAL(cancels[0].second, cancel_reason::timeout);
}

CAF_TEST(a port reports outcomes of the attempts it holds once) {
  send_run({a, b});
  // c was never sent to this worker; a's second report is late.
  worker_done(
    {outcome(a, task_outcome::completed), outcome(c, task_outcome::completed)});
  worker_done({outcome(a, task_outcome::failed, "late")});
  auto& done = router_seen().done;
  CAF_REQUIRE_EQUAL(done.size(), 1u);
  CAF_CHECK_EQUAL(refs_of(done[0]), refs({ref_of(a)}));
  CAF_CHECK_EQUAL(done[0][0].kind, task_outcome::completed);
  // Named by the worker that ran it (its events say so).
  CAF_CHECK_EQUAL(done[0][0].worker, "w1");
  // Another attempt of the same task is not the one it holds either.
  auto b2 = b;
  b2.attempt = 2;
  worker_done({outcome(b2, task_outcome::completed)});
  CAF_CHECK_EQUAL(done.size(), 1u);
  worker_done({outcome(b, task_outcome::completed)});
  CAF_CHECK_EQUAL(done.size(), 2u);
}

CAF_TEST(a worker that goes down fails every held attempt at once) {
  send_run({a, b, c});
  worker_done({outcome(a, task_outcome::completed)});
  anon_send_exit(worker, exit_reason::kill);
  sched.run();
  auto& done = router_seen().done;
  CAF_REQUIRE_EQUAL(done.size(), 2u);
  auto lost = done[1];
  CAF_REQUIRE_EQUAL(lost.size(), 2u);
  CAF_CHECK_EQUAL(ids_of(refs_of(lost)), ids_of({ref_of(b), ref_of(c)}));
  for (auto& x : lost) {
    CAF_CHECK_EQUAL(x.kind, task_outcome::failed);
    CAF_CHECK(x.retryable);
    CAF_CHECK_EQUAL(x.error.find("worker node w1 lost: "), 0u);
    CAF_CHECK_EQUAL(x.worker, "w1");
  }
  CAF_CHECK(terminated(port));
  // The worker's late outcome reaches nobody.
  anon_send(port, done_atom::value,
            std::vector<task_outcome>{outcome(b, task_outcome::completed)});
  sched.run();
  CAF_CHECK_EQUAL(done.size(), 2u);
}

CAF_TEST(a worker process that exits fails its attempts with the signal) {
  send_run({a});
  send_as(router, port, exited_atom::value, std::int32_t{SIGABRT});
  sched.run();
  auto& done = router_seen().done;
  CAF_REQUIRE_EQUAL(done.size(), 1u);
  CAF_REQUIRE_EQUAL(done[0].size(), 1u);
  CAF_CHECK_EQUAL(done[0][0].kind, task_outcome::failed);
  CAF_CHECK_EQUAL(done[0][0].error,
                  "worker process w1 (pid 0) was killed by signal 6 "
                  "(SIGABRT)");
  CAF_CHECK(terminated(port));
  CAF_CHECK_EQUAL(describe_wait_status(3 << 8), "exited with status 3");
}

CAF_TEST(a worker process lost before its status waits a bound for it) {
  offer.pid = 4242;
  auto lost_with = [&](std::vector<claimed_task> xs) {
    auto proc = stand_in(stand_in_worker);
    auto p = spawn_worker_port(sys, context(), offer, proc, router, db);
    sched.run();
    send_as(router, p, run_atom::value, std::move(xs));
    sched.run();
    // The connection drops as the process dies, before the reaper reports.
    anon_send_exit(proc, exit_reason::kill);
    sched.run();
    return p;
  };
  auto& done = router_seen().done;
  auto p = lost_with({a, b});
  CAF_CHECK(done.empty());
  send_as(router, p, exited_atom::value, std::int32_t{SIGSEGV});
  sched.run();
  CAF_REQUIRE_EQUAL(done.size(), 1u);
  CAF_CHECK_EQUAL(ids_of(refs_of(done[0])), ids_of({ref_of(a), ref_of(b)}));
  for (auto& x : done[0])
    CAF_CHECK_EQUAL(x.error, "worker process w1 (pid 4242) was killed by "
                             "signal 11 (SIGSEGV)");
  CAF_CHECK(terminated(p));
  // No status comes (a process that lives on without its connection): the
  // attempts fail anyway, with why the worker was lost.
  auto q = lost_with({c});
  CAF_CHECK_EQUAL(done.size(), 1u);
  sched.advance_time(2s);
  sched.run();
  CAF_REQUIRE_EQUAL(done.size(), 2u);
  CAF_REQUIRE_EQUAL(done[1].size(), 1u);
  CAF_CHECK_EQUAL(done[1][0].error.find("worker node w1 lost: "), 0u);
  CAF_CHECK(done[1][0].retryable);
  CAF_CHECK(terminated(q));
}

CAF_TEST(checkpoints and keep alives of held attempts reach the database) {
  send_run({a});
  checkpoint cp;
  self->send(port, checkpt_atom::value, ref_of(a), cp);
  sched.run();
  CAF_CHECK_EQUAL(answer<bool>(), true);
  CAF_CHECK_EQUAL(db_seen->checkpoints.size(), 1u);
  self->send(port, renew_atom::value, ref_of(a), timespan{30s});
  sched.run();
  CAF_CHECK_EQUAL(answer<bool>(), true);
  CAF_REQUIRE_EQUAL(db_seen->renewals.size(), 1u);
  CAF_CHECK_EQUAL(db_seen->renewals[0], refs({ref_of(a)}));
  // The database no longer has this attempt as current.
  db_seen->not_owned.insert(a.id);
  self->send(port, renew_atom::value, ref_of(a), timespan{30s});
  sched.run();
  auto stale = answer<error>();
  CAF_CHECK_EQUAL(code_of(stale), errc::stale_attempt);
}

CAF_TEST(writes for attempts a port does not hold are stale) {
  send_run({a});
  worker_done({outcome(a, task_outcome::completed)});
  checkpoint cp;
  self->send(port, checkpt_atom::value, ref_of(a), cp);
  self->send(port, renew_atom::value, ref_of(b), timespan{30s});
  sched.run();
  CAF_CHECK_EQUAL(code_of(answer<error>()), errc::stale_attempt);
  CAF_CHECK_EQUAL(code_of(answer<error>()), errc::stale_attempt);
  CAF_CHECK(db_seen->checkpoints.empty());
  CAF_CHECK(db_seen->renewals.empty());
}

CAF_TEST(a stopped port lets held attempts end then tells its worker) {
  send_run({a});
  send_as(router, port, stop_atom::value);
  sched.run();
  CAF_CHECK(!terminated(port));
  CAF_CHECK_EQUAL(worker_seen().stops, 0);
  worker_done({outcome(a, task_outcome::completed)});
  CAF_CHECK(terminated(port));
  CAF_CHECK_EQUAL(worker_seen().stops, 1);
  CAF_CHECK_EQUAL(router_seen().done.size(), 1u);
}

CAF_TEST_FIXTURE_SCOPE_END()
