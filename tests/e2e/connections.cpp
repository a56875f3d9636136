// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE connections
#include <caf/test/unit_test.hpp>

#include <csignal>
#include <mutex>
#include <thread>

#include <caf/all.hpp>

#include "cafmq/actors/detail/database.hpp"
#include "cafmq/actors/detail/listener.hpp"
#include "cafmq/actors/runner.hpp"
#include "cafmq/client.hpp"
#include "cafmq/current_task.hpp"
#include "support/db_fixture.hpp"
#include "support/queue_helpers.hpp"

using namespace cafmq;
using namespace cafmq::actors;
using namespace cafmq::test;
using namespace std::chrono_literals;

namespace {

// Log records kept for the test, from any thread.
struct log_book {
  std::mutex mtx;
  std::vector<log_record> records;

  bool has(const std::string& text) {
    std::lock_guard<std::mutex> guard{mtx};
    for (auto& x : records)
      if (x.message.find(text) != std::string::npos)
        return true;
    return false;
  }
};

// Sends SIGCONT to a stopped backend however the test ends.
struct resume_on_exit {
  int pid;
  ~resume_on_exit() {
    ::kill(pid, SIGCONT);
  }
};

// Stands in for the dispatcher: forwards what the listener sends to `to`.
dispatcher_actor::behavior_type forward_to(dispatcher_actor::pointer,
                                           caf::actor to) {
  return {
    [=](ready_atom, const std::string& name, const std::vector<uuid>& ids) {
      caf::anon_send(to, ready_atom::value, name, ids);
    },
    [=](rescan_atom) { caf::anon_send(to, rescan_atom::value); },
    [](spawn_atom, const std::string&) {
      claim_request none; // no slot: limit 0
      none.limit = 0;
      return none;
    },
    [](spawn_atom, const claim_result&) {},
    [=](renew_atom) { caf::anon_send(to, renew_atom::value); },
    [=](cancel_atom, const std::string& name, const std::string& args,
        const uuid& id) {
      caf::anon_send(to, cancel_atom::value, name, args, id);
    },
    [](wake_atom, std::uint64_t) {},
    [](done_atom, const std::string&, const finished_counts&) {},
    [](retire_atom, const std::string&) { return true; },
    [](channels_atom) { return std::vector<channel_actor>{}; },
    [](pause_atom, const std::string&, bool) { return true; },
    [](events_atom, const event_sink_actor&) {},
    [](offer_atom, const std::vector<std::string>&, std::int32_t) {},
    [](peers_atom, database_actor&) {},
    [](peers_atom, ready_atom, database_actor&) {},
    [](peers_atom, pool_actor&) {},
    [](peers_atom, router_actor&) {},
    [](peers_atom, completer_actor&) {},
    [](peers_atom, lease_keeper_actor&) {},
    [](drain_atom) { return true; },
    [](abandon_atom) {},
    [](stats_atom) { return runner_stats{}; },
  };
}

struct connections_fixture : db_fixture {
  connections_fixture() {
    add_message_types(sys_cfg);
    sys = std::make_unique<caf::actor_system>(sys_cfg);
    cfg.database_url = url;
    cfg.node = "test";
    auto tasks = std::make_shared<registry>();
    tasks->add({"t", [](current_task&) { return caf::error{}; }, {}});
    cfg.tasks = tasks;
    cfg.log = [book = book](const log_record& x) {
      std::lock_guard<std::mutex> guard{book->mtx};
      book->records.push_back(x);
    };
    cfg.min_concurrency = 2;
    cfg.max_concurrency = 4;
    cfg.max_poll_wait = 200ms;
  }

  int count(const std::string& state) {
    return query_value<int>("SELECT count(*) FROM cafmq.tasks WHERE state = '"
                            + state + "'");
  }

  // Waits until `pred` holds, at most `limit` (then fails).
  template <class Pred>
  void wait_for(Pred pred, std::chrono::seconds limit = 30s) {
    auto until = std::chrono::steady_clock::now() + limit;
    while (!pred()) {
      if (std::chrono::steady_clock::now() > until)
        CAF_FAIL("condition not reached within " << limit.count() << " s");
      std::this_thread::sleep_for(10ms);
    }
  }

  int backend_of(const std::string& application) {
    return query_value<int>(
      "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
      "AND application_name = '"
      + application + "'");
  }

  caf::actor_system_config sys_cfg;
  std::unique_ptr<caf::actor_system> sys;
  runner_config cfg;
  std::shared_ptr<log_book> book = std::make_shared<log_book>();
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(connection_tests, connections_fixture)

CAF_TEST(the database actor runs the queue statements) {
  auto ctx = std::make_shared<runtime_context>(cfg);
  auto db
    = spawn_database(*sys, ctx, "write", nullptr, nullptr, supervisor_actor{});
  auto spawned = spawn_builder{"t"}.spawn(*conn);
  CAF_REQUIRE(spawned);
  caf::scoped_actor self{*sys};
  claim_request req;
  req.node = "test";
  req.names = {"t"};
  req.limit = 10;
  claim_result claimed;
  self->request(db, 5s, claim_atom::value, req)
    .receive([&](claim_result& x) { claimed = std::move(x); },
             [](caf::error& err) { CAF_FAIL(render(err)); });
  CAF_REQUIRE_EQUAL(claimed.tasks.size(), 1u);
  attempt_ref ref{spawned->id, 1};
  CAF_CHECK(claimed.tasks[0].id == spawned->id);
  self
    ->request(db, 5s, renew_atom::value, std::vector<attempt_ref>{ref},
              caf::timespan{60s})
    .receive(
      [&](std::vector<lease_state>& owned) {
        CAF_CHECK_EQUAL(owned.size(), 1u);
      },
      [](caf::error& err) { CAF_FAIL(render(err)); });
  self->request(db, 5s, checkpt_atom::value, ref, checkpoint{}.raw_json("7"))
    .receive([](bool ok) { CAF_CHECK(ok); },
             [](caf::error& err) { CAF_FAIL(render(err)); });
  self->request(db, 5s, status_atom::value, spawned->id)
    .receive([](task_status& x) { CAF_CHECK(x.state == task_state::running); },
             [](caf::error& err) { CAF_FAIL(render(err)); });
  write_batch batch;
  batch.completed = {ref};
  self->request(db, 5s, record_atom::value, batch)
    .receive(
      [&](const write_report& x) {
        CAF_CHECK(x.completed == std::vector<uuid>{spawned->id});
      },
      [](caf::error& err) { CAF_FAIL(render(err)); });
  CAF_CHECK_EQUAL(count("completed"), 1);
  // A stale write changes nothing; an unknown task is a clear error.
  self->request(db, 5s, checkpt_atom::value, ref, checkpoint{})
    .receive([](bool) { CAF_FAIL("a stale checkpoint succeeded"); },
             [](caf::error& err) {
               CAF_CHECK_EQUAL(code_of(err), errc::stale_attempt);
             });
  self->request(db, 5s, cancel_atom::value, uuid::random())
    .receive([](std::string&) { CAF_FAIL("cancelled an unknown task"); },
             [](caf::error& err) {
               CAF_CHECK_EQUAL(code_of(err), errc::unknown_task);
             });
  self->send_exit(db, caf::exit_reason::user_shutdown);
}

CAF_TEST(the listener routes wake - ups and cancels with their channel) {
  auto ctx = std::make_shared<runtime_context>(cfg);
  caf::scoped_actor self{*sys};
  auto stand_in = sys->spawn(forward_to, caf::actor{self});
  auto guard = std::make_shared<connection_guard>();
  auto listener = spawn_listener(*sys, ctx, stand_in, guard);
  // After connecting it asks for a claim and a renewal: what was spawned
  // or cancelled before it listened sent no notification it saw.
  self->receive([](renew_atom) {},
                caf::after(10s) >> [] { CAF_FAIL("no renewal asked for"); });
  auto spawned
    = spawn_builder{"t"}.channel_name("mail").channel_args("a\x01b").spawn(
      *conn);
  CAF_REQUIRE(spawned);
  self->receive(
    [&](ready_atom, const std::string& name, const std::vector<uuid>& ids) {
      CAF_CHECK_EQUAL(name, "mail");
      CAF_CHECK(ids == std::vector<uuid>{spawned->id});
    },
    caf::after(10s) >> [] { CAF_FAIL("no wake-up"); });
  auto q = poller();
  claim_or_throw(*q, request({"t"}));
  auto cancelled = cafmq::cancel(*conn, spawned->id);
  CAF_REQUIRE(cancelled);
  self->receive(
    [&](cancel_atom, const std::string& name, const std::string& args,
        const uuid& id) {
      CAF_CHECK_EQUAL(name, "mail");
      CAF_CHECK_EQUAL(args, "a\x01b");
      CAF_CHECK(id == spawned->id);
    },
    caf::after(10s) >> [] { CAF_FAIL("no cancel"); });
  self->send_exit(listener, caf::exit_reason::user_shutdown);
  self->send_exit(stand_in, caf::exit_reason::user_shutdown);
}

CAF_TEST(a hung claim connection is dropped and rebuilt) {
  cfg.request_timeout = 2s;
  cfg.connection.statement_timeout = 1s;
  auto r = runner::start(cfg);
  CAF_REQUIRE(r);
  CAF_REQUIRE(spawn_builder{"t"}.spawn(*conn));
  wait_for([&] { return count("completed") == 1; });
  // The fair claim connection's backend stops answering: its socket stays
  // open, no timeout on the server can fire, no keepalive notices.
  auto pid = backend_of("cafmq claim");
  CAF_REQUIRE_EQUAL(::kill(pid, SIGSTOP), 0);
  resume_on_exit resume{pid};
  // A spawn's task is claimed by id all the same, on its own connection.
  CAF_REQUIRE(spawn_builder{"t"}.spawn(*conn));
  wait_for([&] { return count("completed") == 2; });
  // The next fair claim (within max_poll_wait) hangs and is dropped after
  // the request timeout; a new connection takes over.
  wait_for([&] {
    return book->has("database call hung, connection dropped and rebuilt");
  });
  wait_for([&] {
    return query_value<int>("SELECT count(*) FROM pg_stat_activity "
                            "WHERE datname = current_database() AND "
                            "application_name = 'cafmq claim' AND pid <> "
                            + std::to_string(pid))
           == 1;
  });
  (*r)->stop();
}

CAF_TEST(the shutdown policy stops the runner when the database goes) {
  cfg.on_database_loss = database_loss_policy::shutdown;
  auto r = runner::start(cfg);
  CAF_REQUIRE(r);
  CAF_REQUIRE(spawn_builder{"t"}.spawn(*conn));
  wait_for([&] { return count("completed") == 1; });
  caf::scoped_actor self{*sys};
  auto down = std::make_shared<std::atomic<bool>>(false);
  // Kill every connection of the runner: its next call finds the database
  // gone.
  query_value<int>("SELECT count(pg_terminate_backend(pid)) FROM "
                   "pg_stat_activity WHERE datname = current_database() AND "
                   "pid <> pg_backend_pid()");
  CAF_REQUIRE(spawn_builder{"t"}.spawn(*conn));
  wait_for([&] { return book->has("policy: shutdown"); });
  // The runtime is gone: stop returns at once.
  (*r)->stop();
}

CAF_TEST_FIXTURE_SCOPE_END()
