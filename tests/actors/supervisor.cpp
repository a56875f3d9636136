// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE supervisor
#include <caf/test/dsl.hpp>

#include <map>

#include "runtime/pool_state.hpp"
#include "support/stand_ins.hpp"

using namespace caf;
using namespace cafmq;
using namespace cafmq::actors;
using namespace cafmq::test;
using namespace std::chrono_literals;

namespace {

struct supervisor_fixture : fixture {
  supervisor_fixture() {
    cfg.actor_tasks = {{"patient", cooperative_handler, {}, nullptr}};
    cfg.max_poll_wait = 1h;
    cfg.keep_alive_interval = 10s;
    cfg.max_restarts = 5;
    cfg.restart_period = 60s;
  }

  template <class Handle>
  void crash(const Handle& x) {
    anon_send_exit(x, exit_reason::kill);
    settle();
  }

  void claim_next(std::vector<claimed_task> tasks) {
    claim_result batch;
    batch.tasks = std::move(tasks);
    log->claims.push_back(batch);
    anon_send(dispatcher(), rescan_atom::value);
    sched.run();
  }

  bool alive(const runtime_actor& x) {
    return !deref<face_type>(x).getf(abstract_actor::is_terminated_flag);
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(supervisor_tests, supervisor_fixture)

CAF_TEST(a crashed claim database is restarted and claims go on) {
  start();
  auto old = claim_db;
  crash(claim_db);
  CAF_CHECK(claim_db != old);
  auto ok = make_task("ok");
  claim_next({ok});
  settle();
  CAF_CHECK_EQUAL(completed_count(), 1u);
  CAF_CHECK_EQUAL(stats().restarts, 1);
  CAF_CHECK(logged("actor crashed, restarted"));
}

CAF_TEST(a crashed write database is restarted and outcomes are written) {
  start();
  claim_next({make_task("ok"), make_task("ok")});
  // The handlers have not run; their write database dies.
  auto old = write_db;
  crash(write_db);
  CAF_CHECK(write_db != old);
  settle();
  CAF_CHECK_EQUAL(completed_count(), 2u);
  // Leases have a database of their own, restarted the same way.
  auto old_renew = renew_db;
  crash(renew_db);
  CAF_CHECK(renew_db != old_renew);
  claim_next({make_task("patient")});
  advance(10s);
  CAF_CHECK_EQUAL(log->renewals.size(), 1u);
}

CAF_TEST(a crashed upkeep database is restarted and the vacuums go on) {
  start();
  advance(1s);
  CAF_CHECK_EQUAL(log->vacuum_asks.size(), 1u);
  auto old = upkeep_db;
  crash(upkeep_db);
  CAF_CHECK(upkeep_db != old);
  CAF_CHECK(upkeep_db != admin_db);
  // The next ask, a second later, goes to the new one (the old one would
  // answer nothing).
  advance(1s);
  CAF_CHECK_EQUAL(log->vacuum_asks.size(), 2u);
  CAF_CHECK(logged("actor crashed, restarted"));
}

CAF_TEST(a crashed completer is restarted and loses no outcome) {
  log->fail_records = true;
  start();
  claim_next({make_task("ok"), make_task("ok")});
  settle();
  CAF_CHECK(log->records.empty());
  // The completer holds both outcomes for a retry when it dies; the
  // database is back.
  log->fail_records = false;
  crash(state().completer);
  CAF_CHECK_EQUAL(completed_count(), 2u);
}

CAF_TEST(a crashed pool is restarted and only its attempts fail) {
  cfg.channel_concurrency = 1;
  start();
  auto first = make_task("ok");
  auto second = make_task("ok");
  claim_next({first, second});
  // The first waits for an executor thread, the second in its channel.
  auto old_exec = exec;
  crash(state().pool);
  CAF_CHECK(exec != old_exec);
  settle();
  auto failed = failures();
  CAF_REQUIRE_EQUAL(failed.size(), 1u);
  CAF_CHECK(failed[0].ref.id == first.id);
  CAF_CHECK(failed[0].retryable);
  CAF_CHECK(failed[0].error.find("pool crashed") != std::string::npos);
  CAF_CHECK_EQUAL(completed_count(), 1u);
}

CAF_TEST(a call sent before the runtime started waits for its actors) {
  start(false);
  self->send(rt, cancel_atom::value, make_task("ok").id);
  settle();
  std::string answer;
  self->receive([&](std::string& x) { answer = x; },
                [&](error& x) { answer = render(x); }, after(0s) >> [] {});
  CAF_CHECK_EQUAL(answer, "requested");
}

CAF_TEST(the face sends each call to the actor that serves it now) {
  start();
  // Cancels go to the admin database, the new one after a crash.
  auto old_admin = admin_db;
  crash(admin_db);
  CAF_CHECK(admin_db != old_admin);
  self->send(rt, cancel_atom::value, make_task("ok").id);
  settle();
  std::string answer;
  self->receive([&](std::string& x) { answer = x; }, after(0s) >> [] {});
  // The old one is gone: only the new one answers this.
  CAF_CHECK_EQUAL(answer, "requested");
  // Joins go to the router, the new one after a crash.
  auto old_router = state().router;
  crash(old_router);
  CAF_CHECK(state().router != old_router);
  auto worker = sys.spawn(stand_in_worker);
  self->send(rt, join_atom::value, worker_offer{"w", {"remote"}, 0, 0}, worker);
  settle();
  std::string refused;
  self->receive([&](error& x) { refused = render(x); }, after(0s) >> [] {});
  CAF_CHECK(refused.find("capacity must be positive") != std::string::npos);
  CAF_CHECK_EQUAL(stats().restarts, 2);
  CAF_CHECK(logged("actor crashed, restarted"));
  anon_send_exit(worker, exit_reason::user_shutdown);
}

CAF_TEST(a crashed dispatcher is restarted and claims again) {
  start();
  auto calls = log->claim_calls;
  auto old = dispatcher();
  crash(old);
  CAF_CHECK(dispatcher() != old);
  CAF_CHECK_GREATER(log->claim_calls, calls);
  claim_next({make_task("ok")});
  settle();
  CAF_CHECK_EQUAL(completed_count(), 1u);
  CAF_CHECK_EQUAL(stats().running, 0);
}

CAF_TEST(a crashed channel actor is replaced at the next claim) {
  start();
  auto lost = make_task("patient");
  claim_next({lost});
  CAF_CHECK_EQUAL(stats().running, 1);
  std::vector<channel_actor> channels;
  self->send(dispatcher(), channels_atom::value);
  sched.run();
  self->receive([&](std::vector<channel_actor>& xs) { channels = xs; });
  CAF_REQUIRE_EQUAL(channels.size(), 1u);
  crash(channels[0]);
  // Its handler was cancelled (reason lost) and answered at once; what it
  // returned was written nowhere.
  using pool_type
    = caf::stateful_actor<pool_impl::pool_state, pool_actor::base>;
  CAF_CHECK(deref<pool_type>(state().pool).state.running->empty());
  for (auto& batch : log->records) {
    CAF_CHECK(batch.completed.empty());
    CAF_CHECK(batch.failed.empty());
    CAF_CHECK(batch.released.empty());
  }
  // What it held is gone from this runner: no longer counted or renewed
  // (its lease lapses and another runner takes it).
  CAF_CHECK_EQUAL(stats().running, 0);
  CAF_CHECK_EQUAL(stats().restarts, 1);
  advance(10s);
  CAF_CHECK(log->renewals.empty());
  // The channel's next attempt gets a new owner.
  claim_next({make_task("ok")});
  settle();
  CAF_CHECK_EQUAL(completed_count(), 1u);
}

CAF_TEST(a channel actor killed while two attempts run leaves each task one
           completion) {
  // Handlers that run until they are cancelled, and say why they stopped.
  auto stopped = std::make_shared<std::vector<cancel_reason>>();
  cfg.actor_tasks.push_back(
    {"listening",
     [stopped](handler_actor::pointer self) -> handler_actor::behavior_type {
       auto pending = std::make_shared<typed_response_promise<bool>>();
       return {
         [=](run_atom, const claimed_task&) {
           *pending = self->make_response_promise<bool>();
           return *pending;
         },
         [=](cancel_atom, cancel_reason why) {
           stopped->push_back(why);
           pending->deliver(
             make_error(errc::handler_failed, "stopped: " + to_string(why)));
         },
       };
     },
     {},
     nullptr});
  start();
  auto first = make_task("listening");
  auto second = make_task("listening");
  claim_next({first, second});
  CAF_CHECK_EQUAL(stats().running, 2);
  std::vector<channel_actor> channels;
  self->send(dispatcher(), channels_atom::value);
  sched.run();
  self->receive([&](std::vector<channel_actor>& xs) { channels = xs; });
  CAF_REQUIRE_EQUAL(channels.size(), 1u);
  crash(channels[0]);
  // Both handlers were told (their owner is lost) and ended; nothing of
  // what they returned was written.
  CAF_CHECK_EQUAL(*stopped, std::vector<cancel_reason>(
                              {cancel_reason::lost, cancel_reason::lost}));
  using pool_type
    = caf::stateful_actor<pool_impl::pool_state, pool_actor::base>;
  CAF_CHECK(deref<pool_type>(state().pool).state.running->empty());
  CAF_CHECK_EQUAL(log->record_calls, 0);
  // Their leases lapse and a claim takes them again, attempt 2, which runs
  // to its end: only after the first runs ended, and written once each.
  auto again = [](claimed_task x) {
    x.name = "ok";
    ++x.attempt;
    return x;
  };
  claim_next({again(first), again(second)});
  settle();
  std::map<uuid, std::vector<int>> ledger;
  for (auto& batch : log->records)
    for (auto& ref : batch.completed)
      ledger[ref.id].push_back(ref.attempt);
  CAF_CHECK_EQUAL(ledger.size(), 2u);
  CAF_CHECK_EQUAL(ledger[first.id], std::vector<int>({2}));
  CAF_CHECK_EQUAL(ledger[second.id], std::vector<int>({2}));
  CAF_CHECK_EQUAL(stopped->size(), 2u);
}

CAF_TEST(crashed keeper and maintenance actors are restarted) {
  cfg.maintenance_interval = 60s;
  cfg.schedule_interval = 0s;
  start();
  claim_next({make_task("patient")});
  crash(state().keeper);
  crash(state().maintenance);
  advance(10s);
  CAF_CHECK_EQUAL(log->renewals.size(), 1u);
  advance(50s);
  CAF_CHECK_EQUAL(log->prunes, 1);
  CAF_CHECK_EQUAL(stats().restarts, 2);
}

CAF_TEST(past the restart intensity the runtime stops gracefully) {
  cfg.max_restarts = 2;
  cfg.shutdown_timeout = 5s;
  cfg.handler_grace = 1s;
  cfg.channel_concurrency = 1;
  start();
  auto running = make_task("patient");
  auto unstarted = make_task("ok");
  claim_next({running, unstarted});
  auto runtime = rt;
  self->monitor(runtime);
  crash(claim_db);
  crash(claim_db);
  CAF_CHECK(alive(runtime));
  crash(claim_db);
  CAF_CHECK(logged("restart intensity exceeded"));
  // The attempt that had not started went back to the queue at once, the
  // running one when its cancel came (3 s: the grace and the reserve of 1 s
  // each are left of the 5 s).
  CAF_CHECK(released_ids() == std::set<uuid>{unstarted.id});
  CAF_CHECK(alive(runtime));
  advance(cancel_point() - 1ms);
  CAF_CHECK(released_ids() == std::set<uuid>{unstarted.id});
  advance(1ms);
  CAF_CHECK(released_ids() == (std::set<uuid>{unstarted.id, running.id}));
  bool down = false;
  self->receive([&](down_msg& x) { down = x.source == runtime.address(); },
                after(0s) >> [] {});
  CAF_CHECK(down);
  rt = nullptr;
}

CAF_TEST(restarts spread over time stay within the intensity) {
  cfg.max_restarts = 2;
  cfg.restart_period = 60s;
  start();
  for (int i = 0; i < 4; ++i) {
    crash(claim_db);
    sched.advance_time(61s);
    sched.run();
  }
  CAF_CHECK(alive(rt));
  CAF_CHECK(!logged("restart intensity exceeded"));
}

CAF_TEST(on database loss the reconnect policy keeps running) {
  start();
  claim_next({make_task("patient")});
  anon_send(supervisor(), lost_atom::value, true);
  settle();
  CAF_CHECK(alive(rt));
  CAF_CHECK(failures().empty());
  auto calls = log->claim_calls;
  anon_send(dispatcher(), rescan_atom::value);
  settle();
  CAF_CHECK_GREATER(log->claim_calls, calls);
}

CAF_TEST(on database loss the shutdown policy cancels handlers and stops) {
  cfg.on_database_loss = database_loss_policy::shutdown;
  auto cancels = std::make_shared<std::vector<cancel_reason>>();
  cfg.actor_tasks
    = {{"patient",
        [cancels](handler_actor::pointer self) -> handler_actor::behavior_type {
          return {
            [=](run_atom, const claimed_task&) {
              return self->make_response_promise<bool>();
            },
            [=](cancel_atom, cancel_reason why) { cancels->push_back(why); },
          };
        },
        {},
        nullptr}};
  start();
  claim_next({make_task("patient")});
  auto runtime = rt;
  self->monitor(runtime);
  anon_send(supervisor(), lost_atom::value, true);
  settle();
  CAF_CHECK(logged("policy: shutdown"));
  // Handler actors get their grace period.
  advance(cfg.handler_grace);
  bool down = false;
  self->receive([&](down_msg& x) { down = x.source == runtime.address(); },
                after(0s) >> [] {});
  CAF_CHECK(down);
  // The handler heard of it. Its attempt failed nothing: at most it is
  // given back, if the database takes the write; otherwise its lease
  // decides.
  CAF_CHECK(*cancels == std::vector<cancel_reason>{cancel_reason::shutdown});
  CAF_CHECK(failures().empty());
  CAF_CHECK_EQUAL(completed_count(), 0u);
  rt = nullptr;
}

CAF_TEST(handlers checkpoint and keep alive through the runtime) {
  auto tasks = std::make_shared<registry>(*cfg.tasks);
  tasks->add({"saver",
              [](current_task& t) -> caf::error {
                if (auto err
                    = t.checkpoint(checkpoint{}.raw_json("{\"step\":2}")))
                  return err;
                return t.keep_alive(std::chrono::seconds{60});
              },
              {}});
  cfg.tasks = tasks;
  // Handlers block on their answers: the database they talk to runs on a
  // thread of its own.
  auto backend_log = std::make_shared<fake_db_log>();
  backend_db = sys.spawn<detached>(fake_db, backend_log);
  start();
  auto task = make_task("saver");
  claim_next({task});
  settle();
  CAF_REQUIRE_EQUAL(backend_log->checkpoints.size(), 1u);
  CAF_CHECK(backend_log->checkpoints[0].first == (attempt_ref{task.id, 1}));
  CAF_CHECK_EQUAL(*backend_log->checkpoints[0].second.raw_json(),
                  "{\"step\":2}");
  CAF_REQUIRE_EQUAL(backend_log->renewals.size(), 1u);
  CAF_CHECK_EQUAL(completed_count(), 1u);
  anon_send_exit(backend_db, exit_reason::user_shutdown);
}

CAF_TEST_FIXTURE_SCOPE_END()
