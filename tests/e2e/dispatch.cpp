// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE dispatch
#include <caf/test/unit_test.hpp>

#include <atomic>
#include <thread>

#include <caf/all.hpp>
#include <pqxx/pqxx>

#include "cafmq/actors/protocol.hpp"
#include "cafmq/actors/runner.hpp"
#include "cafmq/admin.hpp"
#include "cafmq/client.hpp"
#include "cafmq/current_task.hpp"
#include "support/queue_helpers.hpp"
#include "support/runner_fixture.hpp"

// Direct dispatch on a real server: a spawn through the runtime while a
// handler is free is written running by that runtime, in the spawn's own
// transaction, and sends no notification; every spawn that a claim would
// not take now takes the normal path and still runs. A directly
// dispatched task's claim and spawn share one transaction's now(), so its
// started_at equals its created_at; a task claimed later does not.

using namespace cafmq;
using namespace cafmq::actors;
using namespace cafmq::test;
using namespace std::chrono_literals;

namespace {

struct dispatch_fixture : runner_fixture {
  dispatch_fixture() {
    add_message_types(sys_cfg);
    sys = std::make_unique<caf::actor_system>(sys_cfg);
    tasks->add({"ok", [](current_task&) { return caf::error{}; }, {}});
    tasks->add({"block", blocks_until(release), {}});
  }

  ~dispatch_fixture() {
    release = true;
    if (runtime) {
      caf::scoped_actor self{*sys};
      self->request(runtime, 60s, stop_atom::value)
        .receive([](bool) {}, [](caf::error&) {});
    }
  }

  // `prefetch`: attempts claimed ahead of free handlers.
  void start(int max_concurrency = 4, int prefetch = 2048) {
    auto cfg = config(tasks);
    cfg.node = "dispatch";
    cfg.min_concurrency = 1;
    cfg.max_concurrency = max_concurrency;
    cfg.prefetch = prefetch;
    auto rt = spawn_runner(*sys, cfg);
    if (!rt)
      CAF_FAIL("cannot start the runtime: " << render(rt.error()));
    runtime = *rt;
  }

  // Spawns through the runtime actor.
  uuid spawn_through(spawn_request req) {
    caf::scoped_actor self{*sys};
    uuid id;
    self->request(runtime, 60s, spawn_atom::value, req)
      .receive([&](const spawn_reply& x) { id = x.id; },
               [](caf::error& err) { CAF_FAIL(render(err)); });
    return id;
  }

  uuid spawn_through(const std::string& name,
                     const std::string& channel = "default") {
    spawn_request req;
    req.name = name;
    req.channel_name = channel;
    return spawn_through(std::move(req));
  }

  std::string where(const uuid& id) {
    return "id = '" + to_string(id) + "'";
  }

  std::string state(const uuid& id) {
    return state_of(*conn, id);
  }

  void wait_state(const uuid& id, const std::string& expected) {
    wait_for([&] { return state(id) == expected; });
  }

  // Claimed in its spawn's transaction.
  bool dispatched(const uuid& id) {
    return query_value<bool>(
      "SELECT started_at IS NOT DISTINCT FROM created_at FROM cafmq.tasks "
      "WHERE "
      + where(id));
  }

  std::shared_ptr<registry> tasks = std::make_shared<registry>();
  std::atomic<bool> release{false};
  caf::actor_system_config sys_cfg;
  std::unique_ptr<caf::actor_system> sys;
  runtime_actor runtime;
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(dispatch_tests, dispatch_fixture)

CAF_TEST(a spawn through the runtime is written running and not notified) {
  start();
  pqxx::connection listening{url};
  std::vector<std::string> heard;
  struct receiver : pqxx::notification_receiver {
    receiver(pqxx::connection& c, std::vector<std::string>& out)
      : pqxx::notification_receiver(c, "cafmq_ready"), out(out) {}
    void operator()(const std::string& payload, int) override {
      out.push_back(payload);
    }
    std::vector<std::string>& out;
  } on_ready{listening, heard};
  auto id = spawn_through("ok");
  wait_state(id, "completed");
  CAF_CHECK(dispatched(id));
  CAF_CHECK_EQUAL(
    query_value<int>("SELECT attempt FROM cafmq.tasks WHERE " + where(id)), 1);
  CAF_CHECK_EQUAL(query_value<std::string>("SELECT node FROM cafmq.tasks "
                                           "WHERE "
                                           + where(id)),
                  "dispatch");
  // Notifications come in commit order: once a later spawn's is heard,
  // one of the dispatched task would have been heard before it.
  auto marker = spawn_builder{"marker"}.channel_name("marker").spawn(*conn);
  CAF_REQUIRE(marker);
  auto until = std::chrono::steady_clock::now() + 60s;
  auto heard_marker = [&] {
    for (auto& x : heard)
      if (x.rfind("marker", 0) == 0)
        return true;
    return false;
  };
  while (!heard_marker() && std::chrono::steady_clock::now() < until)
    listening.await_notification(1, 0);
  CAF_REQUIRE(heard_marker());
  for (auto& x : heard)
    CAF_CHECK(x.find(to_string(id)) == std::string::npos);
  // A task spawned outside the runtime is claimed in a later transaction.
  auto outside = spawn_builder{"ok"}.spawn(*conn);
  CAF_REQUIRE(outside);
  wait_state(outside->id, "completed");
  CAF_CHECK(!dispatched(outside->id));
}

CAF_TEST(a spawn that a claim would not take now takes the normal path) {
  start();
  auto normal = [&](const uuid& id) {
    wait_state(id, "completed");
    CAF_CHECK(!dispatched(id));
  };
  // Due later: woken by its own notification when due (the runner's timer
  // is an hour).
  spawn_request later;
  later.name = "ok";
  later.delay = caf::timespan{200ms};
  normal(spawn_through(later));
  // A paused channel: pending until resumed.
  CAF_REQUIRE(pause(*conn, pause_kind::channel, "paused"));
  auto paused = spawn_through("ok", "paused");
  CAF_CHECK_EQUAL(state(paused), "pending");
  CAF_REQUIRE(resume(*conn, pause_kind::channel, "paused"));
  normal(paused);
  // A limited channel: its claims count what runs, so the fair claim.
  channel_limit limit;
  limit.channel_name = "limited";
  limit.max_running = 1;
  CAF_REQUIRE(!set_channel_limit(*conn, limit));
  normal(spawn_through("ok", "limited"));
  // Ordered: behind a running earlier one it waits for it; the first of a
  // channel takes the normal path too (the fair claim keeps the order).
  spawn_request first;
  first.name = "block";
  first.channel_name = "ordered";
  first.ordered = true;
  auto first_id = spawn_through(first);
  wait_state(first_id, "running");
  CAF_CHECK(!dispatched(first_id));
  spawn_request second = first;
  second.name = "ok";
  auto second_id = spawn_through(second);
  CAF_CHECK_EQUAL(state(second_id), "pending");
  release = true;
  normal(first_id);
  normal(second_id);
  // A reservation: uncommitted until committed.
  spawn_request reserved;
  reserved.name = "ok";
  reserved.commit_interval = caf::timespan{1min};
  auto reserved_id = spawn_through(reserved);
  CAF_CHECK_EQUAL(state(reserved_id), "uncommitted");
  CAF_REQUIRE(commit(*conn, std::vector<uuid>{reserved_id}));
  normal(reserved_id);
  // A prioritized task waits (its channel is paused): claims serve it
  // first, so a spawn of an unprioritized one is not taken past it.
  CAF_REQUIRE(pause(*conn, pause_kind::channel, "urgent"));
  auto urgent
    = spawn_builder{"ok"}.channel_name("urgent").priority(5).spawn(*conn);
  CAF_REQUIRE(urgent);
  normal(spawn_through("ok"));
  CAF_REQUIRE(resume(*conn, pause_kind::channel, "urgent"));
  wait_state(urgent->id, "completed");
  // With nothing in the way, the next one is dispatched.
  auto direct = spawn_through("ok");
  wait_state(direct, "completed");
  CAF_CHECK(dispatched(direct));
}

CAF_TEST(a spawn while every handler is busy takes the normal path) {
  start(1, 0);
  auto busy = spawn_through("block");
  wait_state(busy, "running");
  CAF_CHECK(dispatched(busy));
  auto waiting = spawn_through("ok");
  CAF_CHECK_EQUAL(state(waiting), "pending");
  release = true;
  wait_state(waiting, "completed");
  CAF_CHECK(!dispatched(waiting));
}

CAF_TEST(a unique keys duplicate is not dispatched and frees its slot) {
  // Two slots: the duplicate gets the free one, and gives it back.
  start(2, 0);
  spawn_request keyed;
  keyed.name = "block";
  keyed.unique_key = std::string{"k"};
  auto holder = spawn_through(keyed);
  wait_state(holder, "running");
  CAF_CHECK(dispatched(holder));
  release = true;
  wait_state(holder, "completed");
  release = false;
  auto again = spawn_through(keyed);
  wait_state(again, "running");
  // Its duplicate: the holder's id, nothing written, nothing claimed.
  CAF_CHECK_EQUAL(spawn_through(keyed), again);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.tasks"), 2);
  release = true;
  wait_state(again, "completed");
  // Both slots are free: the next spawn is dispatched.
  auto next = spawn_through("ok");
  wait_state(next, "completed");
  CAF_CHECK(dispatched(next));
}

CAF_TEST_FIXTURE_SCOPE_END()
