// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE pool
#include <caf/test/dsl.hpp>

#include "cafmq/actors/detail/pool.hpp"
#include "runtime/pool_state.hpp"
#include "support/stand_ins.hpp"

using namespace caf;
using namespace cafmq;
using namespace cafmq::actors;
using namespace cafmq::test;
using namespace std::chrono_literals;

namespace {

// What the handler actors of a test did: how many started, how each ended.
struct handler_log {
  int started = 0;
  std::vector<error> exits;
};

using handler_fn = handler_actor::behavior_type (*)(handler_actor::pointer);

// A handler actor's behavior that `log` sees start and end.
actor_task_definition::behavior_fn watched(std::shared_ptr<handler_log> log,
                                           handler_fn make) {
  return [=](handler_actor::pointer self) {
    ++log->started;
    self->attach_functor([log](const error& x) { log->exits.push_back(x); });
    return make(self);
  };
}

struct pool_fixture : unit_fixture {
  pool_fixture() {
    cfg.actor_tasks = {{"coop", watched(handlers, cooperative_handler), {}},
                       {"stubborn", watched(handlers, stubborn_handler), {}}};
    cfg.handler_grace = 5s;
    // A non-blocking handler that checkpoints and keeps its lease alive.
    auto tasks = std::make_shared<registry>(*cfg.tasks);
    task_definition waits{
      "quick_waits",
      [](current_task& t) -> caf::error {
        auto a = t.checkpoint(checkpoint{}.raw_json("1"));
        auto b = t.keep_alive(std::chrono::seconds{30});
        return a && b ? a : make_error(errc::handler_failed, "not refused");
      },
      {}};
    waits.blocking = false;
    tasks->add(waits);
    cfg.tasks = tasks;
  }

  void start() {
    exec = std::make_shared<executor>(0);
    pool = keep(spawn_pool(sys, context(), exec, db, started));
  }

  // Sends attempts to the pool as their owner, the channel, does.
  std::vector<claimed_task> run(std::vector<std::string> names) {
    std::vector<claimed_task> xs;
    for (auto& name : names)
      xs.push_back(make_task(name));
    send_as(owner, pool, run_atom::value, xs);
    sched.run();
    return xs;
  }

  void cancel(const claimed_task& x, cancel_reason why) {
    send_as(owner, pool, cancel_atom::value, ref_of(x), why);
    sched.run();
  }

  channel_log& owner_seen() {
    return deref<channel_stand_in>(owner).state;
  }

  // The outcomes the owner got, in one list.
  std::vector<task_outcome> reported() {
    std::vector<task_outcome> result;
    for (auto& xs : owner_seen().done)
      result.insert(result.end(), xs.begin(), xs.end());
    return result;
  }

  std::shared_ptr<handler_log> handlers = std::make_shared<handler_log>();
  database_actor db = stand_in_db(log);
  channel_actor owner = stand_in(stand_in_channel);
  pool_actor pool;
};

bool mentions(const task_outcome& x, const std::string& text) {
  return x.error.find(text) != std::string::npos;
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(pool_tests, pool_fixture)

CAF_TEST(blocking handlers queue on the executor and report to their owner) {
  start();
  auto xs = run({"ok", "boom"});
  CAF_CHECK_EQUAL(exec->queued(), 2u);
  CAF_CHECK_EQUAL(owner_seen().done.size(), 0u);
  CAF_CHECK_EQUAL(exec->run_queued(), 2u);
  sched.run();
  // Both outcomes wait in one box: one message to the owner.
  CAF_REQUIRE_EQUAL(owner_seen().done.size(), 1u);
  auto out = reported();
  CAF_CHECK_EQUAL(refs_of(out), refs_of(xs));
  CAF_CHECK_EQUAL(out[0].kind, task_outcome::completed);
  CAF_CHECK_EQUAL(out[1].kind, task_outcome::failed);
  CAF_CHECK_EQUAL(out[1].retryable, true);
  CAF_CHECK(mentions(out[1], "boom"));
}

CAF_TEST(a cancel of a job not yet started ends it unstarted) {
  start();
  auto xs = run({"ok", "ok"});
  cancel(xs[1], cancel_reason::cancelled);
  CAF_CHECK_EQUAL(exec->queued(), 1u);
  auto out = reported();
  CAF_REQUIRE_EQUAL(out.size(), 1u);
  check_failed(out[0], xs[1], false);
  CAF_CHECK(mentions(out[0], "never started"));
  CAF_CHECK_EQUAL(exec->run_queued(), 1u);
  sched.run();
  out = reported();
  CAF_REQUIRE_EQUAL(out.size(), 2u);
  CAF_CHECK_EQUAL(out[1].ref, ref_of(xs[0]));
  CAF_CHECK_EQUAL(out[1].kind, task_outcome::completed);
}

CAF_TEST(a timeout counts from the start and goes to the owner) {
  start();
  auto task = make_task("ok");
  task.timeout = 3s;
  send_as(owner, pool, run_atom::value, std::vector<claimed_task>{task});
  sched.run();
  // Waiting for a thread does not count (advance() would run the job).
  sched.advance_time(3s);
  sched.run();
  CAF_CHECK_EQUAL(owner_seen().deadlines.size(), 0u);
  CAF_CHECK_EQUAL(exec->run_queued(), 1u);
  sched.advance_time(3s - 1us);
  sched.run();
  CAF_CHECK_EQUAL(owner_seen().deadlines.size(), 0u);
  sched.advance_time(1us);
  sched.run();
  CAF_REQUIRE_EQUAL(owner_seen().deadlines.size(), 1u);
  CAF_CHECK_EQUAL(owner_seen().deadlines[0].first, ref_of(task));
  CAF_CHECK_EQUAL(owner_seen().deadlines[0].second, cancel_reason::timeout);
}

CAF_TEST(a non blocking handler runs on the scheduler) {
  start();
  auto xs = run({"quick"});
  CAF_CHECK_EQUAL(exec->queued(), 0u);
  auto out = reported();
  CAF_REQUIRE_EQUAL(out.size(), 1u);
  CAF_CHECK_EQUAL(out[0].ref, ref_of(xs[0]));
  CAF_CHECK_EQUAL(out[0].kind, task_outcome::completed);
}

CAF_TEST(a non blocking handler may not wait for the database) {
  // checkpoint(cp) and keep_alive() would block a scheduler thread: both
  // are refused with a clear error, and nothing reaches the database.
  start();
  run({"quick_waits"});
  auto out = reported();
  CAF_REQUIRE_EQUAL(out.size(), 1u);
  CAF_CHECK_EQUAL(out[0].kind, task_outcome::failed);
  CAF_CHECK(mentions(out[0], "is non-blocking"));
  CAF_CHECK(mentions(out[0], "checkpoint(tx, cp)"));
  CAF_CHECK(log->checkpoints.empty());
  CAF_CHECK(log->renewals.empty());
}

CAF_TEST(abandoning gives back queued jobs and leaves handler actors alone) {
  start();
  auto xs = run({"ok", "coop"});
  CAF_CHECK_EQUAL(handlers->started, 1);
  anon_send(pool, abandon_atom::value);
  sched.run();
  auto out = reported();
  CAF_REQUIRE_EQUAL(out.size(), 1u);
  CAF_CHECK_EQUAL(out[0].ref, ref_of(xs[0]));
  CAF_CHECK_EQUAL(out[0].kind, task_outcome::released);
  CAF_CHECK_EQUAL(exec->queued(), 0u);
  // The handler actor runs on: its kill comes from its own grace timer.
  CAF_CHECK_EQUAL(handlers->exits.size(), 0u);
}

CAF_TEST(when its owner ends the attempts are cancelled and not reported) {
  // Two handler actors run, one job waits for a thread, one attempt waits
  // for a slot; then their channel actor dies.
  cfg.max_concurrency = 2;
  start();
  auto xs = run({"coop", "stubborn", "ok", "coop"});
  CAF_CHECK_EQUAL(handlers->started, 2);
  CAF_CHECK_EQUAL(exec->queued(), 1u);
  anon_send_exit(owner, exit_reason::kill);
  sched.run();
  // The cooperative handler answered its cancel; the waiting job and the
  // waiting attempt never start.
  using pool_type
    = caf::stateful_actor<pool_impl::pool_state, pool_actor::base>;
  auto& st = deref<pool_type>(pool).state;
  CAF_CHECK_EQUAL(exec->queued(), 0u);
  CAF_CHECK(st.waiting.empty());
  CAF_CHECK_EQUAL(st.running->size(), 1u);
  CAF_CHECK_EQUAL(st.running->count(ref_of(xs[1])), 1u);
  CAF_CHECK_EQUAL(st.running->begin()->second.token->reason(),
                  cancel_reason::lost);
  // The stubborn one is killed after its grace, and nothing is left.
  sched.advance_time(cfg.handler_grace);
  sched.run();
  CAF_CHECK(st.running->empty());
  CAF_CHECK_EQUAL(handlers->started, 2);
}

CAF_TEST(a handler actor that ignores its cancel is killed after the grace) {
  start();
  auto xs = run({"stubborn"});
  CAF_CHECK_EQUAL(handlers->started, 1);
  cancel(xs[0], cancel_reason::cancelled);
  advance(5s - 1us);
  CAF_CHECK_EQUAL(reported().size(), 0u);
  CAF_CHECK_EQUAL(handlers->exits.size(), 0u);
  advance(1us);
  CAF_CHECK_EQUAL(handlers->exits, std::vector<error>{exit_reason::kill});
  auto out = reported();
  CAF_REQUIRE_EQUAL(out.size(), 1u);
  check_failed(out[0], xs[0], false);
  CAF_CHECK(
    mentions(out[0], "ignored its cancelled for 5000 ms and was killed"));
}

CAF_TEST(at most max concurrency handler actors run at once) {
  cfg.max_concurrency = 2;
  start();
  auto xs = run({"coop", "coop", "coop"});
  CAF_CHECK_EQUAL(handlers->started, 2);
  // One ends: the waiting one starts.
  cancel(xs[0], cancel_reason::cancelled);
  CAF_CHECK_EQUAL(handlers->started, 3);
  auto out = reported();
  CAF_REQUIRE_EQUAL(out.size(), 1u);
  check_failed(out[0], xs[0], false);
  CAF_CHECK(mentions(out[0], "stopped: cancelled"));
}

CAF_TEST(a cancel of a waiting handler actor ends it unstarted) {
  cfg.max_concurrency = 1;
  start();
  auto xs = run({"coop", "coop"});
  cancel(xs[1], cancel_reason::cancelled);
  CAF_CHECK_EQUAL(handlers->started, 1);
  auto out = reported();
  CAF_REQUIRE_EQUAL(out.size(), 1u);
  check_failed(out[0], xs[1], false);
  CAF_CHECK(mentions(out[0], "never started"));
}

CAF_TEST(stop gives back queued jobs as released) {
  cfg.max_concurrency = 1;
  start();
  auto xs = run({"ok", "ok", "coop", "coop"});
  CAF_CHECK_EQUAL(handlers->started, 1);
  anon_send(pool, stop_atom::value);
  sched.run();
  CAF_CHECK_EQUAL(exec->queued(), 0u);
  auto out = reported();
  CAF_CHECK_EQUAL(ids_of(refs_of(out)),
                  (std::set<uuid>{xs[0].id, xs[1].id, xs[3].id}));
  CAF_CHECK_EQUAL(out.size(), 3u);
  for (auto& x : out)
    CAF_CHECK_EQUAL(x.kind, task_outcome::released);
  // The running handler runs on; nothing new starts.
  CAF_CHECK_EQUAL(handlers->exits.size(), 0u);
  auto late = run({"coop"});
  CAF_CHECK_EQUAL(handlers->started, 1);
  out = reported();
  CAF_REQUIRE_EQUAL(out.size(), 4u);
  CAF_CHECK_EQUAL(out[3].ref, ref_of(late[0]));
  CAF_CHECK_EQUAL(out[3].kind, task_outcome::released);
}

CAF_TEST_FIXTURE_SCOPE_END()
