// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE endings
#include <caf/test/unit_test.hpp>

#include <atomic>
#include <mutex>
#include <thread>

#include <caf/all.hpp>
#include <pqxx/pqxx>

#include "cafmq/actors/node_client.hpp"
#include "cafmq/actors/protocol.hpp"
#include "cafmq/actors/runner.hpp"
#include "cafmq/admin.hpp"
#include "cafmq/client.hpp"
#include "cafmq/current_task.hpp"
#include "support/queue_helpers.hpp"
#include "support/runner_fixture.hpp"

// Every way an attempt or a task ends, as a subscriber to the runtime's
// events sees it: each ending gets exactly its events, in order, and each
// event says what the task's row says.

using namespace cafmq;
using namespace cafmq::actors;
using namespace cafmq::test;
using namespace std::chrono_literals;

namespace endings_impl {

// The events a subscriber got, by task.
struct event_log {
  std::mutex mtx;
  std::map<uuid, std::vector<task_event>> by_task;

  std::vector<task_event> of(const uuid& id) {
    std::lock_guard<std::mutex> guard{mtx};
    auto i = by_task.find(id);
    return i == by_task.end() ? std::vector<task_event>{} : i->second;
  }
};

event_actor::behavior_type collect(event_actor::pointer,
                                   std::shared_ptr<event_log> log) {
  return {
    [=](event_atom, const std::vector<task_event>& xs) {
      std::lock_guard<std::mutex> guard{log->mtx};
      for (auto& x : xs)
        log->by_task[x.id].push_back(x);
    },
  };
}

// (kind, attempt) of each event: what the matrix compares.
using steps = std::vector<std::pair<std::string, std::int32_t>>;

steps steps_of(const std::vector<task_event>& xs) {
  steps result;
  for (auto& x : xs)
    result.emplace_back(to_string(x.kind), x.attempt);
  return result;
}

std::string describe(const steps& xs) {
  std::string result;
  for (auto& [kind, attempt] : xs)
    result += (result.empty() ? "" : ", ") + kind + "("
              + std::to_string(attempt) + ")";
  return "[" + result + "]";
}

// A handler that waits until its attempt is asked to stop, then fails.
caf::error wait_for_stop(current_task& task) {
  while (!task.cancelled())
    std::this_thread::sleep_for(1ms);
  return make_error(errc::handler_failed,
                    "stopped: " + to_string(task.cancelled_because()));
}

struct endings_fixture : runner_fixture {
  endings_fixture() {
    add_message_types(sys_cfg);
    sys = std::make_unique<caf::actor_system>(sys_cfg);
  }

  ~endings_fixture() {
    if (runtime) {
      caf::scoped_actor self{*sys};
      self->request(runtime, 60s, stop_atom::value)
        .receive([](bool) {}, [](caf::error&) {});
    }
  }

  // Starts a runtime with `tasks` embedded in this test's actor system and
  // subscribes to all its events.
  void start(std::shared_ptr<registry> tasks) {
    auto cfg = config(std::move(tasks));
    cfg.node = "endings";
    // Lost leases are noticed quickly.
    cfg.keep_alive_interval = 200ms;
    auto rt = spawn_runner(*sys, cfg);
    if (!rt)
      CAF_FAIL("cannot start the runtime: " << render(rt.error()));
    runtime = *rt;
    auto subscriber = sys->spawn(collect, log);
    caf::scoped_actor self{*sys};
    auto live = false;
    self
      ->request(runtime, 60s, subscribe_atom::value, event_filter{},
                caf::actor_cast<event_actor>(subscriber))
      .receive([&](bool x) { live = x; },
               [](caf::error& err) { CAF_FAIL(render(err)); });
    CAF_REQUIRE(live);
  }

  template <class T, class... Ts>
  T ask(Ts&&... xs) {
    caf::scoped_actor self{*sys};
    T result;
    self->request(runtime, 60s, std::forward<Ts>(xs)...)
      .receive([&](T& x) { result = std::move(x); },
               [](caf::error& err) { CAF_FAIL(render(err)); });
    return result;
  }

  // Waits until the task's last event is `kind` of `attempt`, then
  // checks the whole sequence against `expected`.
  std::vector<task_event> expect_steps(const uuid& id, const steps& expected) {
    auto& last = expected.back();
    wait_for([&] {
      auto xs = steps_of(log->of(id));
      return !xs.empty() && xs.back() == last;
    });
    // Anything that would follow the ending comes with it or right after.
    auto xs = log->of(id);
    CAF_CHECK_EQUAL(describe(steps_of(xs)), describe(expected));
    return xs;
  }

  std::string state(const uuid& id) {
    return state_of(*conn, id);
  }

  void exec(const std::string& sql) {
    pqxx::nontransaction tx{*conn};
    tx.exec(sql);
  }

  caf::actor_system_config sys_cfg;
  std::unique_ptr<caf::actor_system> sys;
  runtime_actor runtime;
  std::shared_ptr<event_log> log = std::make_shared<event_log>();
};

} // namespace endings_impl

using endings_impl::endings_fixture;
using endings_impl::wait_for_stop;

CAF_TEST_FIXTURE_SCOPE(endings_tests, endings_fixture)

CAF_TEST(every ending gets its events in order) {
  std::atomic<bool> fixed{false};
  auto tasks = std::make_shared<registry>();
  tasks->add({"ok", [](current_task&) { return caf::error{}; }, {}});
  tasks->add(
    {"complete", [](current_task& task) { return task.complete(); }, {}});
  auto url_copy = url;
  tasks->add({"complete_tx",
              [url_copy](current_task& task) -> caf::error {
                pqxx::connection own{url_copy};
                pqxx::work tx{own};
                tx.exec("SELECT 1");
                return task.complete(tx);
              },
              {}});
  tasks->add({"flaky",
              [](current_task& task) -> caf::error {
                if (task.attempt() == 1)
                  return make_error(errc::handler_failed, "first try fails");
                return caf::none;
              },
              {}});
  tasks->add({"broken",
              [&fixed](current_task&) -> caf::error {
                if (fixed)
                  return caf::none;
                return make_error(errc::handler_failed, "broken");
              },
              {}});
  tasks->add({"wait", wait_for_stop, {}});
  tasks->add({"slow",
              [](current_task& task) -> caf::error {
                if (task.attempt() > 1)
                  return caf::none;
                return wait_for_stop(task);
              },
              {}});
  tasks->add({"hold",
              [](current_task& task) -> caf::error {
                while (!task.cancelled())
                  std::this_thread::sleep_for(1ms);
                return caf::none; // finished anyway: not written
              },
              {}});
  start(tasks);
  // Returned success, spawned through the runtime.
  spawn_request req;
  req.name = "ok";
  auto ok = ask<spawn_reply>(spawn_atom::value, req).id;
  expect_steps(ok, {{"spawned", 0}, {"started", 1}, {"completed", 1}});
  // complete(), and complete(tx) in the handler's own transaction.
  auto completed = spawn_builder{"complete"}.spawn(*conn)->id;
  expect_steps(completed, {{"started", 1}, {"completed", 1}});
  auto in_tx = spawn_builder{"complete_tx"}.spawn(*conn)->id;
  expect_steps(in_tx, {{"started", 1}, {"completed", 1}});
  // A failure with a retry, then success.
  auto flaky = spawn_builder{"flaky"}.retries(3).backoff(10ms).spawn(*conn)->id;
  auto xs = expect_steps(
    flaky, {{"started", 1}, {"failed", 1}, {"started", 2}, {"completed", 2}});
  CAF_CHECK(xs[1].retryable);
  CAF_CHECK(xs[1].error.find("first try fails") != std::string::npos);
  // A final failure; then a manual retry, which runs it again.
  auto broken = spawn_builder{"broken"}.retries(0).spawn(*conn)->id;
  xs = expect_steps(broken, {{"started", 1}, {"failed", 1}});
  CAF_CHECK(!xs[1].retryable);
  CAF_CHECK_EQUAL(state(broken), "failed");
  fixed = true;
  auto retried = retry(*conn, {broken});
  CAF_REQUIRE(retried && retried->retried.size() == 1u);
  expect_steps(
    broken, {{"started", 1}, {"failed", 1}, {"started", 2}, {"completed", 2}});
  // A cancel through the runtime: of a task that has not run yet...
  auto later = spawn_builder{"ok"}.delay(1h).spawn(*conn)->id;
  CAF_CHECK_EQUAL(ask<std::string>(cancel_atom::value, later), "cancelled");
  xs = expect_steps(later, {{"cancelled", 0}});
  CAF_CHECK_EQUAL(xs[0].name, "ok");
  CAF_CHECK_EQUAL(state(later), "cancelled");
  // ... and of a running one: it ends cancelled, not retried.
  auto running = spawn_builder{"wait"}.retries(5).spawn(*conn)->id;
  wait_for([&] { return !log->of(running).empty(); });
  CAF_CHECK_EQUAL(ask<std::string>(cancel_atom::value, running), "requested");
  xs = expect_steps(running, {{"started", 1}, {"cancelled", 1}});
  CAF_CHECK(!xs[1].retryable);
  CAF_CHECK_EQUAL(state(running), "cancelled");
  // A timeout fails the attempt, retryably; the retry succeeds.
  auto slow = spawn_builder{"slow"}
                .timeout(200ms)
                .retries(1)
                .backoff(10ms)
                .spawn(*conn)
                ->id;
  xs = expect_steps(
    slow, {{"started", 1}, {"failed", 1}, {"started", 2}, {"completed", 2}});
  CAF_CHECK(xs[1].retryable);
  CAF_CHECK(xs[1].error.find("timeout") != std::string::npos);
  // A deadline ends the task failed, whatever attempts are left.
  auto deadline = spawn_builder{"wait"}
                    .retries(5)
                    .deadline(std::chrono::system_clock::now() + 500ms)
                    .spawn(*conn)
                    ->id;
  xs = expect_steps(deadline, {{"started", 1}, {"failed", 1}});
  CAF_CHECK(!xs[1].retryable);
  CAF_CHECK(xs[1].error.find("deadline") != std::string::npos);
  CAF_CHECK_EQUAL(state(deadline), "failed");
  // A lost lease: another claim took the task (its attempt moved on), so
  // the renewal fails; the handler is stopped and what it returns is not
  // written.
  auto held = spawn_builder{"hold"}.spawn(*conn)->id;
  wait_for([&] { return !log->of(held).empty(); });
  exec("UPDATE cafmq.tasks_live SET attempt = attempt + 1 WHERE id = '"
       + to_string(held) + "'");
  xs = expect_steps(held, {{"started", 1}, {"lost", 1}});
  CAF_CHECK(xs[1].error.find("no longer current") != std::string::npos);
  CAF_CHECK_EQUAL(state(held), "running"); // as the other claim left it
  {
    pqxx::work tx{*conn};
    finish_by_hand(tx, "id = '" + to_string(held) + "'", "cancelled");
    tx.commit();
  }
  // Endings a claim decides instead of running the task, reported by the
  // runtime whose claim it was. A wake-up that names no task makes it claim
  // fairly (a spawn's names its tasks, which it claims by id).
  // A deadline that passed before the task ran:
  auto expired = spawn_builder{"ok"}
                   .delay(1h)
                   .deadline(std::chrono::system_clock::now() + 2h)
                   .spawn(*conn)
                   ->id;
  exec(
    "UPDATE cafmq.tasks_live SET run_at = now(), deadline = now() - interval "
    "'1 s' WHERE id = '"
    + to_string(expired) + "'");
  exec("SELECT cafmq.notify_ready(ARRAY[''])");
  xs = expect_steps(expired, {{"failed", 0}});
  CAF_CHECK(!xs[0].retryable);
  CAF_CHECK_EQUAL(xs[0].error, "deadline passed before the task ran");
  // A poison task: its fifth attempt in a row was lost (its runner died).
  auto poison = spawn_builder{"ok"}.delay(1h).retries(20).spawn(*conn)->id;
  exec("UPDATE cafmq.tasks_live SET state = 'running', attempt = 5, "
       "lost_attempts = 4, run_at = now() - interval '1 s', started_at = "
       "now() WHERE id = '"
       + to_string(poison) + "'");
  exec("SELECT cafmq.notify_ready(ARRAY[''])");
  xs = expect_steps(poison, {{"failed", 5}});
  CAF_CHECK(xs[0].error.find("poison") != std::string::npos);
  CAF_CHECK_EQUAL(state(poison), "failed");
  // Every event names the runtime's node.
  for (auto& kvp : log->by_task)
    for (auto& x : kvp.second)
      CAF_CHECK_EQUAL(x.node, "endings");
}

CAF_TEST_FIXTURE_SCOPE_END()
