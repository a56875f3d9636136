// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE dispatcher
#include <caf/test/dsl.hpp>

#include <algorithm>

#include "support/stand_ins.hpp"

using namespace caf;
using namespace cafmq;
using namespace cafmq::actors;
using namespace cafmq::test;
using namespace std::chrono_literals;

namespace {

// Queues the claim's answer of one new task, then sends the notification
// of a spawn that names it.
claimed_task name_one(fixture& f) {
  auto task = make_task("ok");
  claim_result taken;
  taken.tasks = {task};
  f.log->claims.push_back(taken);
  anon_send(f.dispatcher(), ready_atom::value, std::string{"default"},
            std::vector<uuid>{task.id});
  return task;
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(dispatcher_tests, fixture)

CAF_TEST(claimed tasks run and their outcomes are written) {
  claim_result batch;
  auto ok1 = make_task("ok");
  auto ok2 = make_task("ok");
  auto quick = make_task("quick");
  auto failing = make_task("boom");
  auto mismatch = make_task("typed", "\"not a number\"");
  batch.tasks = {ok1, ok2, quick, failing, mismatch};
  log->claims.push_back(batch);
  cfg.min_concurrency = 4;
  cfg.max_concurrency = 5;
  start();
  // Nothing ran yet: the blocking handlers wait for an executor thread,
  // the non-blocking one ran on the scheduler.
  CAF_CHECK_EQUAL(exec->queued(), 4u);
  CAF_CHECK_EQUAL(completed_count(), 1u);
  settle();
  CAF_CHECK_EQUAL(completed_count(), 3u);
  auto failed = failures();
  CAF_REQUIRE_EQUAL(failed.size(), 2u);
  for (auto& f : failed) {
    if (f.ref.id == failing.id) {
      CAF_CHECK(f.retryable);
      CAF_CHECK(f.error.find("boom") != std::string::npos);
    } else {
      CAF_CHECK(f.ref.id == mismatch.id);
      CAF_CHECK(!f.retryable);
      CAF_CHECK(f.error.find("payload_mismatch") != std::string::npos);
    }
  }
  // Group commit: the first outcome goes out alone, the rest in one batch.
  CAF_CHECK_EQUAL(log->records.size(), 2u);
}

CAF_TEST(the dispatcher wakes at the nearest scheduled time) {
  log->idle_wait = 2s;
  start();
  CAF_CHECK_EQUAL(log->claim_calls, 1);
  advance(1s);
  CAF_CHECK_EQUAL(log->claim_calls, 1);
  advance(1s);
  CAF_CHECK_EQUAL(log->claim_calls, 2);
  // Nothing scheduled: the wait is capped by max_poll_wait.
  log->idle_wait = 1h;
  advance(2s);
  CAF_CHECK_EQUAL(log->claim_calls, 3);
  advance(5s);
  CAF_CHECK_EQUAL(log->claim_calls, 4);
}

CAF_TEST(an empty claim never makes the dispatcher spin) {
  // The database reports work somewhere (wait 0) but none for us.
  log->idle_wait = 0s;
  start();
  settle();
  CAF_CHECK_EQUAL(log->claim_calls, 1);
}

CAF_TEST(a notification makes the dispatcher claim at once) {
  start();
  CAF_CHECK_EQUAL(log->claim_calls, 1);
  anon_send(dispatcher(), ready_atom::value, std::string{"foo"},
            std::vector<uuid>{});
  settle();
  CAF_CHECK_EQUAL(log->claim_calls, 2);
  anon_send(dispatcher(), rescan_atom::value);
  settle();
  CAF_CHECK_EQUAL(log->claim_calls, 3);
}

CAF_TEST(a claim by id goes on its own connection while a fair claim runs) {
  cfg.min_concurrency = 1;
  cfg.max_concurrency = 2;
  cfg.prefetch = 0;
  start();
  CAF_REQUIRE(ids_db != claim_db);
  // A fair claim is on its way to the claim database, not yet answered
  // (slow, as under a held snapshot).
  anon_send(dispatcher(), rescan_atom::value);
  sched.prioritize(dispatcher());
  sched.run_once();
  CAF_REQUIRE(sched.has_job());
  auto before = log->requests.size();
  // A spawn names a task: its claim by id goes to the other connection at
  // once and is answered before the fair claim.
  auto task = name_one(*this);
  sched.prioritize(dispatcher());
  sched.run_once();
  CAF_REQUIRE(sched.prioritize(ids_db));
  sched.run_once();
  CAF_REQUIRE_EQUAL(log->requests.size(), before + 1);
  CAF_CHECK(log->requests.back().ids == std::vector<uuid>{task.id});
  // Then the fair claim returns (nothing left), and the task runs.
  settle();
  CAF_REQUIRE_EQUAL(log->requests.size(), before + 2);
  CAF_CHECK(log->requests.back().ids.empty());
  CAF_CHECK_EQUAL(completed_count(), 1u);
}

// Under a held snapshot a fair claim is slow and locks the tasks it takes;
// a claim by id beside it then finds them locked (wait 0). That asks for
// another fair claim only if the fair claim in flight did not take them:
// else slow fair claims ran back to back.
CAF_TEST(a claim by id that the fair claim in flight beat asks no other) {
  cfg.min_concurrency = 1;
  cfg.max_concurrency = 4;
  cfg.prefetch = 0;
  start();
  // Sends a fair claim and, while it is in flight, a claim by id of `id`;
  // the claim by id answers first (`by_id`), then the fair claim (`fair`).
  auto race = [&](const uuid& id, claim_result by_id, claim_result fair) {
    anon_send(dispatcher(), rescan_atom::value);
    sched.prioritize(dispatcher());
    sched.run_once();
    log->claims.push_back(std::move(by_id));
    log->claims.push_back(std::move(fair));
    anon_send(dispatcher(), ready_atom::value, std::string{"default"},
              std::vector<uuid>{id});
    sched.prioritize(dispatcher());
    sched.run_once();
    CAF_REQUIRE(sched.prioritize(ids_db));
    sched.run_once();
    sched.prioritize(dispatcher());
    sched.run_once();
    settle();
  };
  claim_result locked;
  locked.wait = 0s;
  auto task = make_task("ok");
  claim_result took;
  took.tasks = {task};
  auto n = log->requests.size();
  race(task.id, locked, took);
  // The claim by id, then the fair claim that took the task: no third.
  CAF_REQUIRE_EQUAL(log->requests.size(), n + 2);
  CAF_CHECK(log->requests[n].ids == std::vector<uuid>{task.id});
  CAF_CHECK(log->requests[n + 1].ids.empty());
  CAF_CHECK_EQUAL(completed_count(), 1u);
  // Held back by a rule: the fair claim in flight did not take it either,
  // so one more fair claim follows.
  n = log->requests.size();
  race(uuid::random(), locked, claim_result{});
  CAF_REQUIRE_EQUAL(log->requests.size(), n + 3);
  CAF_CHECK(log->requests[n + 2].ids.empty());
}

CAF_TEST(a notification that names tasks claims them by id when they fit) {
  cfg.min_concurrency = 1;
  cfg.max_concurrency = 2;
  cfg.prefetch = 0;
  start();
  CAF_REQUIRE_EQUAL(log->requests.size(), 1u);
  auto task = name_one(*this);
  settle();
  // The first claim found nothing to do (wait 60 s): the runner is idle,
  // and the task's ending does not make it claim again.
  CAF_REQUIRE_EQUAL(log->requests.size(), 2u);
  CAF_CHECK(log->requests[1].ids == std::vector<uuid>{task.id});
  CAF_CHECK_EQUAL(completed_count(), 1u);
  // Taken by another runner already: nothing more to do.
  auto n = log->requests.size();
  log->claims.push_back(claim_result{});
  anon_send(dispatcher(), ready_atom::value, std::string{"default"},
            std::vector<uuid>{uuid::random()});
  settle();
  CAF_REQUIRE_EQUAL(log->requests.size(), n + 1);
  CAF_CHECK_EQUAL(log->requests[n].ids.size(), 1u);
  // Held back (ordered, paused, limited...): the fair claim follows.
  claim_result held_back;
  held_back.wait = 0s;
  log->claims.push_back(held_back);
  anon_send(dispatcher(), ready_atom::value, std::string{"default"},
            std::vector<uuid>{uuid::random()});
  settle();
  CAF_REQUIRE_EQUAL(log->requests.size(), n + 3);
  CAF_CHECK_EQUAL(log->requests[n + 1].ids.size(), 1u);
  CAF_CHECK(log->requests[n + 2].ids.empty());
  // Named while a claim by id is under way: claimed by id next.
  auto m = log->requests.size();
  auto a = uuid::random();
  auto b = uuid::random();
  log->claims.push_back(claim_result{});
  log->claims.push_back(claim_result{});
  anon_send(dispatcher(), ready_atom::value, std::string{"default"},
            std::vector<uuid>{a});
  anon_send(dispatcher(), ready_atom::value, std::string{"default"},
            std::vector<uuid>{b});
  settle();
  CAF_REQUIRE_EQUAL(log->requests.size(), m + 2);
  CAF_CHECK(log->requests[m].ids == std::vector<uuid>{a});
  CAF_CHECK(log->requests[m + 1].ids == std::vector<uuid>{b});
  n = m + 2;
  // More tasks than free slots: claimed by id up to the slots, the third
  // once an ending makes room; no fair claim (it would take no more).
  std::vector<uuid> three{uuid::random(), uuid::random(), uuid::random()};
  claim_result two;
  two.tasks = {make_task("ok"), make_task("ok")};
  two.tasks[0].id = three[0];
  two.tasks[1].id = three[1];
  log->claims.push_back(two);
  log->claims.push_back(claim_result{});
  anon_send(dispatcher(), ready_atom::value, std::string{"default"}, three);
  settle();
  CAF_REQUIRE_EQUAL(log->requests.size(), n + 2);
  CAF_CHECK(log->requests[n].ids
            == std::vector<uuid>(three.begin(), three.begin() + 2));
  CAF_CHECK(log->requests[n + 1].ids == std::vector<uuid>{three[2]});
  // The claim's sizing saw none of the claims by id: every fair claim
  // asked for the two slots.
  for (auto& req : log->requests)
    if (req.ids.empty())
      CAF_CHECK_EQUAL(req.limit, 2);
}

// Spawns "ok" through the runtime's face and returns its reply.
spawn_reply spawn_through(fixture& f, std::string name = "ok") {
  spawn_request req;
  req.name = std::move(name);
  f.self->send(f.rt, spawn_atom::value, req);
  f.settle();
  spawn_reply reply;
  f.self->receive([&](const spawn_reply& x) { reply = x; });
  return reply;
}

CAF_TEST(a spawn through the runtime while a handler is free runs directly) {
  cfg.min_concurrency = 1;
  cfg.max_concurrency = 2;
  start();
  auto claims = log->claim_calls;
  auto reply = spawn_through(*this);
  // The spawn's own write claimed it for one slot: no claim, and it ran.
  CAF_REQUIRE_EQUAL(log->dispatches.size(), 1u);
  auto& claim = log->dispatches[0];
  CAF_CHECK_EQUAL(claim.limit, 1);
  CAF_CHECK_EQUAL(claim.node, "test");
  CAF_CHECK(std::count(claim.names.begin(), claim.names.end(), "ok") == 1);
  CAF_CHECK_EQUAL(log->claim_calls, claims);
  CAF_REQUIRE_EQUAL(completed_count(), 1u);
  CAF_CHECK(log->records.back().completed.at(0).id == reply.id);
  CAF_CHECK_EQUAL(stats().running, 0);
  // A name this runner does not run: the normal path.
  spawn_through(*this, "patient");
  CAF_CHECK_EQUAL(log->dispatches.size(), 1u);
  CAF_CHECK_EQUAL(log->spawns.size(), 2u);
  // The claim did not take it (held back, or a duplicate): the slot is
  // free again, and the next spawn is dispatched.
  log->dispatch_takes = false;
  spawn_through(*this);
  CAF_CHECK_EQUAL(log->dispatches.size(), 2u);
  CAF_CHECK_EQUAL(completed_count(), 1u);
  CAF_CHECK_EQUAL(stats().running, 0);
  log->dispatch_takes = true;
  spawn_through(*this);
  CAF_CHECK_EQUAL(log->dispatches.size(), 3u);
  CAF_CHECK_EQUAL(completed_count(), 2u);
}

CAF_TEST(a spawn while every handler is busy takes the normal path) {
  cfg.min_concurrency = 1;
  cfg.max_concurrency = 2;
  claim_result busy;
  busy.tasks = {make_task("ok"), make_task("ok")};
  log->claims.push_back(busy);
  start();
  // Both attempts wait for an executor thread: both slots are held.
  CAF_REQUIRE_EQUAL(exec->queued(), 2u);
  spawn_request req;
  req.name = "ok";
  self->send(rt, spawn_atom::value, req);
  sched.run();
  CAF_CHECK_EQUAL(log->dispatches.size(), 0u);
  CAF_CHECK_EQUAL(log->spawns.size(), 1u);
  // Once they ended, a slot is free.
  settle();
  self->receive([](const spawn_reply&) {});
  CAF_CHECK_EQUAL(completed_count(), 2u);
  spawn_through(*this);
  CAF_CHECK_EQUAL(log->dispatches.size(), 1u);
  CAF_CHECK_EQUAL(completed_count(), 3u);
}

CAF_TEST(direct dispatch can be turned off) {
  cfg.direct_dispatch = false;
  start();
  spawn_through(*this);
  CAF_CHECK_EQUAL(log->dispatches.size(), 0u);
  CAF_CHECK_EQUAL(log->spawns.size(), 1u);
  CAF_CHECK_EQUAL(completed_count(), 0u);
}

CAF_TEST(a cancel that overtakes a direct dispatch reaches its attempt) {
  cfg.min_concurrency = 1;
  cfg.max_concurrency = 2;
  start();
  // The slot is given; the cancel comes before the claimed task does.
  self->send(dispatcher(), spawn_atom::value, std::string{"ok"});
  sched.run();
  claim_request claim;
  self->receive([&](const claim_request& x) { claim = x; });
  CAF_REQUIRE_EQUAL(claim.limit, 1);
  auto task = make_task("ok");
  notify_cancel(task);
  sched.run();
  claim_result claimed;
  claimed.tasks = {task};
  anon_send(dispatcher(), spawn_atom::value, claimed);
  settle();
  // Ended at once (queued, never started): written as a cancelled failure.
  CAF_CHECK_EQUAL(completed_count(), 0u);
  auto failed = failures();
  CAF_REQUIRE_EQUAL(failed.size(), 1u);
  CAF_CHECK(failed[0].ref.id == task.id);
  CAF_CHECK_EQUAL(stats().running, 0);
}

CAF_TEST(an ending makes the runner claim unless the queue was found idle) {
  // A limited channel's ready tasks wait for a slot (wait 100 ms): each
  // ending may free one, so each makes the runner claim.
  log->idle_wait = 100ms;
  cfg.min_concurrency = 1;
  cfg.max_concurrency = 4;
  cfg.prefetch = 0;
  start();
  auto task = name_one(*this);
  settle();
  CAF_CHECK_EQUAL(completed_count(), 1u);
  CAF_REQUIRE_EQUAL(log->requests.size(), 3u);
  CAF_CHECK(log->requests[2].ids.empty());
  // A fair claim that filled its batch: the next follows at once, and so
  // does one after each ending, until a claim comes back short.
  log->idle_wait = 60s;
  claim_result full;
  for (int i = 0; i < 4; ++i)
    full.tasks.push_back(make_task("ok"));
  log->claims.push_back(full);
  anon_send(dispatcher(), rescan_atom::value);
  settle();
  CAF_CHECK_EQUAL(log->requests[3].limit, 4);
  CAF_CHECK_EQUAL(completed_count(), 5u);
  auto n = log->requests.size();
  CAF_CHECK_GREATER_OR_EQUAL(n, 5u);
  // The last came back short with nothing due: idle, so the ending of a
  // task claimed by id claims nothing more.
  claim_result next;
  next.tasks = {make_task("ok")};
  log->claims.push_back(next);
  anon_send(dispatcher(), ready_atom::value, std::string{"default"},
            std::vector<uuid>{next.tasks[0].id});
  settle();
  CAF_CHECK_EQUAL(completed_count(), 6u);
  CAF_CHECK_EQUAL(log->requests.size(), n + 1);
}

CAF_TEST(a runner without room when it wakes claims after the next ending) {
  cfg.min_concurrency = 2;
  cfg.max_concurrency = 4;
  cfg.prefetch = 0;
  claim_result three;
  three.tasks = {make_task("ok"), make_task("ok"), make_task("ok")};
  three.wait = 60s;
  log->claims.push_back(three);
  start();
  // A short claim (idle), whose handlers wait for an executor thread.
  CAF_REQUIRE_EQUAL(log->claim_calls, 1);
  CAF_REQUIRE_EQUAL(exec->queued(), 3u);
  // Its timer fires while the three leave too little room to claim.
  sched.advance_time(cfg.max_poll_wait);
  sched.run();
  CAF_CHECK_EQUAL(log->claim_calls, 1);
  // Their endings make room: the runner claims.
  settle();
  CAF_CHECK_EQUAL(completed_count(), 3u);
  CAF_CHECK_GREATER_OR_EQUAL(log->claim_calls, 2);
}

CAF_TEST(a runner that serves some channels ignores notifications of others) {
  cfg.channels = {"mine"};
  start();
  anon_send(dispatcher(), ready_atom::value, std::string{"other"},
            std::vector<uuid>{});
  settle();
  CAF_CHECK_EQUAL(log->claim_calls, 1);
  anon_send(dispatcher(), ready_atom::value, std::string{"mine"},
            std::vector<uuid>{});
  settle();
  CAF_CHECK_EQUAL(log->claim_calls, 2);
  CAF_CHECK(log->requests.back().channels == std::vector<std::string>{"mine"});
}

CAF_TEST(the claim ahead follows the measured throughput) {
  cfg.min_concurrency = 1;
  cfg.max_concurrency = 2;
  cfg.prefetch = 1000;
  cfg.prefetch_window = 1s;
  for (int i = 0; i < 50; ++i) {
    claim_result batch;
    batch.tasks = {make_task("ok"), make_task("ok")};
    // The database has more: a short claim with no more ready would leave
    // the runner idle until the next wake-up.
    batch.wait = 0s;
    log->claims.push_back(batch);
  }
  start();
  settle();
  // Nothing measured yet: claims only fill the handler slots.
  CAF_REQUIRE_GREATER_OR_EQUAL(log->claim_limits.size(), 51u);
  CAF_CHECK_EQUAL(log->claim_limits.front(), 2);
  CAF_CHECK_EQUAL(completed_count(), 100u);
  // 100 attempts in one second: hold what half that rate (the smoothed
  // estimate) finishes in the 1 s window.
  sched.advance_time(1s);
  anon_send(dispatcher(), ready_atom::value, std::string{},
            std::vector<uuid>{});
  settle();
  CAF_CHECK_EQUAL(log->claim_limits.back(), 2 + 50);
  // A second without work halves the estimate again.
  sched.advance_time(1s);
  anon_send(dispatcher(), ready_atom::value, std::string{},
            std::vector<uuid>{});
  settle();
  CAF_CHECK_EQUAL(log->claim_limits.back(), 2 + 25);
}

CAF_TEST(a starved runner claims more each time up to the prefetch) {
  // No time passes, so no throughput is measured: only the ramp grows the
  // claims. Handlers finish before each claim returns (starved).
  cfg.min_concurrency = 2;
  cfg.max_concurrency = 4;
  cfg.prefetch = 2048;
  cfg.prefetch_window = 1s;
  log->backlog = 20000;
  start();
  // The claim database is the slow part: everything else (executor jobs
  // included) runs before each of its messages, so every claim comes back
  // to a runner that ran out of work.
  auto is_db = [&](resumable* job) {
    auto ptr = dynamic_cast<abstract_actor*>(job);
    return ptr != nullptr && ptr->id() == claim_db.id();
  };
  for (;;) {
    if (!sched.has_job()) {
      if (exec->run_queued() == 0)
        break;
      continue;
    }
    auto& jobs = sched.jobs;
    auto other = std::find_if_not(jobs.begin(), jobs.end(), is_db);
    if (other != jobs.end() && other != jobs.begin())
      std::iter_swap(jobs.begin(), other);
    if (other == jobs.end() && exec->run_queued() > 0)
      continue;
    sched.run_once();
  }
  CAF_CHECK_EQUAL(log->backlog, 0);
  auto& limits = log->claim_limits;
  CAF_REQUIRE_GREATER_OR_EQUAL(limits.size(), 10u);
  CAF_CHECK_EQUAL(limits.front(), 4);
  // Each claim is sent while the previous batch is held, so a claim and the
  // one before it together are what the runner holds: they grow to
  // max_concurrency + prefetch within a few claims and never beyond.
  size_t full_at = 0;
  for (size_t i = 1; i < limits.size(); ++i) {
    auto held = limits[i - 1] + limits[i];
    CAF_CHECK_LESS_OR_EQUAL(held, 4 + 2048);
    if (full_at == 0 && held == 4 + 2048)
      full_at = i;
  }
  CAF_CHECK_GREATER(full_at, 0u);
  CAF_CHECK_LESS_OR_EQUAL(full_at, 8u);
  CAF_CHECK_EQUAL(completed_count(), 20000u);
  // An empty claim ends the ramp: the next claim fills the slots only.
  anon_send(dispatcher(), ready_atom::value, std::string{},
            std::vector<uuid>{});
  settle();
  CAF_CHECK_EQUAL(limits.back(), 4);
}

CAF_TEST(an outcome waiting to be written keeps its lease) {
  claim_result batch;
  auto task = make_task("ok");
  batch.tasks = {task};
  log->claims.push_back(batch);
  log->fail_records = true;
  start();
  settle();
  // The handler returned; writing its completion fails (and is retried).
  CAF_CHECK(log->records.empty());
  CAF_CHECK(logged("writing task outcomes failed"));
  advance(10s);
  CAF_REQUIRE_EQUAL(log->renewals.size(), 1u);
  CAF_CHECK(log->renewals[0] == std::vector<attempt_ref>{{task.id, 1}});
  // Once written, the attempt leaves the renewals.
  log->fail_records = false;
  advance(5s);
  CAF_CHECK_EQUAL(completed_count(), 1u);
  advance(10s);
  CAF_CHECK_EQUAL(log->renewals.size(), 1u);
}

CAF_TEST(leases of held attempts are renewed once per interval) {
  claim_result batch;
  batch.tasks = {make_task("ok"), make_task("ok")};
  batch.tasks[1].channel_args = "other";
  log->claims.push_back(batch);
  cfg.max_poll_wait = 20s;
  start();
  // The executor runs nothing: both attempts stay running.
  CAF_CHECK(log->renewals.empty());
  sched.advance_time(10s);
  sched.run();
  CAF_REQUIRE_EQUAL(log->renewals.size(), 1u);
  CAF_CHECK_EQUAL(log->renewals[0].size(), 2u);
}

CAF_TEST(a listener that reconnected has the leases renewed at once) {
  claim_result batch;
  auto task = make_task("ok");
  batch.tasks = {task};
  log->claims.push_back(batch);
  cfg.max_poll_wait = 20s;
  start();
  // Its cancel was requested while the listener was away: the notification
  // reached nobody. The renewal out of turn reports it, long before the
  // first regular one.
  log->cancel_requested.insert(task.id);
  anon_send(dispatcher(), renew_atom::value);
  settle();
  CAF_REQUIRE_EQUAL(log->renewals.size(), 1u);
  CAF_CHECK(log->renewals[0] == std::vector<attempt_ref>{{task.id, 1}});
  CAF_CHECK_EQUAL(completed_count(), 0u);
  auto failed = failures();
  CAF_REQUIRE_EQUAL(failed.size(), 1u);
  CAF_CHECK(failed[0].ref.id == task.id);
  CAF_CHECK(failed[0].error.find("cancel") != std::string::npos);
  // The regular renewals keep their pace.
  sched.advance_time(10s);
  settle();
  CAF_CHECK_EQUAL(log->renewals.size(), 1u);
}

CAF_TEST(an attempt whose lease was lost is stopped and not written) {
  claim_result batch;
  auto task = make_task("ok");
  batch.tasks = {task};
  log->claims.push_back(batch);
  start();
  log->not_owned.insert(task.id);
  sched.advance_time(10s);
  sched.run();
  // Its token fired (reason lost) before it ran: it ends without a write.
  settle();
  CAF_CHECK(log->records.empty());
  CAF_CHECK_EQUAL(stats().lost, 1);
  CAF_CHECK(logged("lost their lease"));
}

CAF_TEST(handler actors are supervised per attempt) {
  auto def = [](std::string name,
                handler_actor::behavior_type (*fun)(handler_actor::pointer)) {
    return actor_task_definition{name, fun, {}};
  };
  auto good = [](handler_actor::pointer) -> handler_actor::behavior_type {
    return {[](run_atom, const claimed_task&) { return true; },
            [](cancel_atom, cancel_reason) {
            }};
  };
  auto throwing = [](handler_actor::pointer) -> handler_actor::behavior_type {
    return {[](run_atom, const claimed_task&) -> bool {
              throw std::runtime_error("kaputt");
            },
            [](cancel_atom, cancel_reason) {
            }};
  };
  auto refusing = [](handler_actor::pointer) -> handler_actor::behavior_type {
    return {[](run_atom, const claimed_task&) -> caf::result<bool> {
              return make_error(errc::payload_mismatch, "cannot read this");
            },
            [](cancel_atom, cancel_reason) {
            }};
  };
  auto quitting
    = [](handler_actor::pointer self) -> handler_actor::behavior_type {
    return {[=](run_atom, const claimed_task&) -> caf::result<bool> {
              self->quit(make_error(errc::handler_failed, "gave up"));
              return caf::delegated<bool>{};
            },
            [](cancel_atom, cancel_reason) {
            }};
  };
  cfg.actor_tasks = {def("good", good), def("throwing", throwing),
                     def("refusing", refusing), def("quitting", quitting)};
  claim_result batch;
  auto t_good = make_task("good");
  auto t_throwing = make_task("throwing");
  auto t_refusing = make_task("refusing");
  auto t_quitting = make_task("quitting");
  batch.tasks = {t_good, t_throwing, t_refusing, t_quitting};
  log->claims.push_back(batch);
  cfg.min_concurrency = 4;
  start();
  settle();
  CAF_CHECK_EQUAL(completed_count(), 1u);
  std::map<std::string, attempt_failure> failed;
  for (auto& b : log->records) {
    for (auto& c : b.completed)
      CAF_CHECK(c.id == t_good.id);
    for (auto& f : b.failed)
      failed[f.ref.id == t_throwing.id   ? "throwing"
             : f.ref.id == t_refusing.id ? "refusing"
                                         : "quitting"]
        = f;
  }
  CAF_REQUIRE_EQUAL(failed.size(), 3u);
  // The exception's own text is recorded.
  CAF_CHECK_EQUAL(failed["throwing"].error,
                  "cafmq::handler_failed: handler actor threw: kaputt");
  CAF_CHECK(failed["throwing"].retryable);
  CAF_CHECK(failed["quitting"].retryable);
  CAF_CHECK(failed["quitting"].error.find("gave up") != std::string::npos);
  CAF_CHECK(!failed["refusing"].retryable);
  // The runtime carries on: it still claims.
  auto calls = log->claim_calls;
  anon_send(dispatcher(), rescan_atom::value);
  settle();
  CAF_CHECK_GREATER(log->claim_calls, calls);
}

CAF_TEST(idle channel actors retire) {
  claim_result batch;
  batch.tasks = {make_task("ok"), make_task("ok")};
  batch.tasks[1].channel_args = "other";
  log->claims.push_back(batch);
  cfg.channel_idle_timeout = 10s;
  cfg.max_poll_wait = 1h;
  cfg.keep_alive_interval = 1h;
  start();
  settle();
  CAF_CHECK_EQUAL(stats().channels, 2);
  advance(10s);
  CAF_CHECK_EQUAL(stats().channels, 0);
}

CAF_TEST(a paused channel starts nothing and is not claimed) {
  cfg.max_poll_wait = 1h;
  start();
  self->send(rt, pause_atom::value, std::string{"default"});
  settle();
  self->receive([](bool) {});
  claim_result batch;
  auto task = make_task("ok");
  batch.tasks = {task};
  log->claims.push_back(batch);
  anon_send(dispatcher(), rescan_atom::value);
  settle();
  // The claim excludes the channel; what still came is given back.
  CAF_CHECK(log->requests.back().paused == std::vector<std::string>{"default"});
  CAF_CHECK(released_ids() == std::set<uuid>{task.id});
  CAF_CHECK_EQUAL(completed_count(), 0u);
  self->send(rt, resume_atom::value, std::string{"default"});
  settle();
  self->receive([](bool) {});
  CAF_CHECK(log->requests.back().paused.empty());
}

// A fair claim in flight asked without the pause, and may take a task
// spawned after it: the pause is answered once that claim has returned (a
// node's test saw such a task claimed and given back, so running to its
// watcher, in one CI run).
CAF_TEST(a pause is answered once the claims made before it returned) {
  cfg.max_poll_wait = 1h;
  start();
  settle();
  auto task = make_task("ok");
  claim_result batch;
  batch.tasks = {task};
  log->claims.push_back(batch);
  anon_send(dispatcher(), rescan_atom::value);
  sched.prioritize(dispatcher());
  sched.run_once();
  // The claim's request waits in the claim database's mailbox.
  auto calls = log->claim_calls;
  self->send(rt, pause_atom::value, std::string{"default"});
  sched.prioritize(rt);
  sched.run_once(); // the face asks the dispatcher
  sched.prioritize(dispatcher());
  sched.run_once(); // the dispatcher pauses the channel
  CAF_CHECK_EQUAL(log->claim_calls, calls);
  CAF_CHECK(self->mailbox().empty());
  // The claim returns with the task: the pause is answered, and the task
  // is given back, not run.
  sched.prioritize(claim_db);
  sched.run_once();
  CAF_CHECK_EQUAL(log->claim_calls, calls + 1);
  settle();
  auto answered = false;
  self->receive([&](bool x) { answered = x; });
  CAF_CHECK(answered);
  CAF_CHECK(released_ids() == std::set<uuid>{task.id});
  CAF_CHECK_EQUAL(completed_count(), 0u);
  // With no claim in flight, a pause is answered at once.
  self->send(rt, pause_atom::value, std::string{"other"});
  sched.prioritize(rt);
  sched.run_once();
  sched.prioritize(dispatcher());
  sched.run_once();
  CAF_CHECK(!self->mailbox().empty());
  self->receive([](bool) {});
}

CAF_TEST_FIXTURE_SCOPE_END()

CAF_TEST_FIXTURE_SCOPE(dispatcher_offer_tests, fixture)

CAF_TEST(offered names are claimed with the workers capacity) {
  start();
  CAF_CHECK_EQUAL(log->requests.back().names,
                  std::vector<std::string>({"boom", "ok", "quick", "typed"}));
  CAF_CHECK_EQUAL(log->claim_limits.back(), 4);
  anon_send(dispatcher(), offer_atom::value,
            std::vector<std::string>{"remote", "ok"}, std::int32_t{10});
  settle();
  CAF_REQUIRE_EQUAL(log->claim_calls, 2);
  CAF_CHECK_EQUAL(
    log->requests.back().names,
    std::vector<std::string>({"boom", "ok", "quick", "remote", "typed"}));
  CAF_CHECK_EQUAL(log->claim_limits.back(), 14);
  // No worker offers it any more: it is no longer claimed.
  anon_send(dispatcher(), offer_atom::value, std::vector<std::string>{},
            std::int32_t{0});
  settle();
  CAF_REQUIRE_EQUAL(log->claim_calls, 3);
  CAF_CHECK_EQUAL(log->requests.back().names,
                  std::vector<std::string>({"boom", "ok", "quick", "typed"}));
  CAF_CHECK_EQUAL(log->claim_limits.back(), 4);
}

CAF_TEST(a joined worker runs the attempts of the names it offers) {
  start();
  auto worker = sys.spawn(stand_in_worker);
  self->send(rt, join_atom::value, worker_offer{"w1", {"remote"}, 2, 0},
             worker);
  settle();
  worker_link_actor port;
  self->receive([&](worker_link_actor& x) { port = std::move(x); });
  CAF_CHECK_EQUAL(log->claim_limits.back(), 6);
  claim_result batch;
  auto r1 = make_task("remote");
  auto r2 = make_task("remote");
  batch.tasks = {r1, r2};
  log->claims.push_back(batch);
  anon_send(dispatcher(), rescan_atom::value);
  settle();
  auto& runs = deref<worker_stand_in>(worker).state.runs;
  CAF_REQUIRE_EQUAL(runs.size(), 1u);
  CAF_CHECK_EQUAL(runs[0].size(), 2u);
  // Their leases are renewed like local attempts'.
  advance(10s);
  CAF_REQUIRE(!log->renewals.empty());
  CAF_CHECK_EQUAL(ids_of(log->renewals.back()),
                  ids_of({ref_of(r1), ref_of(r2)}));
  // One completes; the worker dies with the other: it fails at once.
  anon_send(port, done_atom::value,
            std::vector<task_outcome>{outcome(r1, task_outcome::completed)});
  settle();
  anon_send_exit(worker, exit_reason::kill);
  settle();
  CAF_CHECK_EQUAL(completed_count(), 1u);
  auto failed = failures();
  CAF_REQUIRE_EQUAL(failed.size(), 1u);
  CAF_CHECK_EQUAL(failed[0].ref, ref_of(r2));
  CAF_CHECK(failed[0].retryable);
  CAF_CHECK(failed[0].error.find("worker node w1 lost") != std::string::npos);
  // The worker is forgotten: its name is claimed no more.
  anon_send(dispatcher(), rescan_atom::value);
  settle();
  CAF_CHECK_EQUAL(log->requests.back().names,
                  std::vector<std::string>({"boom", "ok", "quick", "typed"}));
}

CAF_TEST_FIXTURE_SCOPE_END()
