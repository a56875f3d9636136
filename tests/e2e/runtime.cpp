// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE runtime
#include <caf/test/unit_test.hpp>

#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include "cafmq/actors/runner.hpp"
#include "cafmq/client.hpp"
#include "cafmq/current_task.hpp"
#include "cafmq/schedule.hpp"
#include "support/db_fixture.hpp"
#include "support/queue_helpers.hpp"
#include "support/runner_fixture.hpp"

using namespace cafmq;
using namespace cafmq::test;
using namespace std::chrono_literals;

namespace {

using in_process_fixture = runner_fixture;

} // namespace

CAF_TEST_FIXTURE_SCOPE(runtime_tests, in_process_fixture)

CAF_TEST(a graceful stop lets running handlers finish and loses nothing) {
  std::atomic<bool> release{false};
  std::atomic<int> started{0};
  auto tasks = std::make_shared<registry>();
  tasks->add({"slow",
              [&](current_task&) {
                ++started;
                while (!release)
                  std::this_thread::sleep_for(1ms);
                return caf::error{};
              },
              {}});
  std::vector<spawn_builder> xs(10, spawn_builder{"slow"});
  for (auto& x : xs)
    x.id(uuid::random());
  spawn_or_throw(*conn, xs);
  auto cfg = config(tasks);
  cfg.min_concurrency = 4;
  cfg.prefetch = 256;
  cfg.prefetch_window = 0ms; // hold ahead from the first claim
  auto r = start(cfg);
  // All ten are claimed (claim ahead); four run, six wait for a slot. The
  // claim its listener asks for once connected has returned too: a claim
  // in flight at the stop could take the six given back (and give them
  // back again, counted as claimed twice).
  wait_for([&] {
    return count("running") == 10 && started == 4 && r->stats().claims >= 2;
  });
  std::thread stopper{[&] {
    r->stop();
  }};
  // The stop gives the waiting six back at once and waits for the four.
  wait_for([&] { return count("running") == 4; });
  CAF_CHECK_EQUAL(count("pending"), 6);
  release = true;
  stopper.join();
  CAF_CHECK_EQUAL(count("completed"), 4);
  // The counters stay readable, with what the stop wrote.
  auto stats = r->stats();
  CAF_CHECK_EQUAL(stats.claimed, 10);
  CAF_CHECK_EQUAL(stats.completed, 4);
  CAF_CHECK_EQUAL(count("running"), 0);
  CAF_CHECK_EQUAL(count("pending"), 6);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.tasks WHERE "
                                   "state = 'pending' AND attempt = 0"),
                  6);
}

CAF_TEST(completions in the handlers transactions count as completed) {
  // The application's connection, one handler at a time.
  auto app = connect();
  std::mutex app_mtx;
  auto tasks = std::make_shared<registry>();
  tasks->add({"in_tx",
              [&](current_task& task) -> caf::error {
                std::lock_guard<std::mutex> guard{app_mtx};
                pqxx::work tx{*app};
                return task.complete(tx);
              },
              {}});
  spawn_or_throw(*conn, std::vector<spawn_builder>(20, spawn_builder{"in_tx"}));
  auto r = start(config(tasks));
  wait_for([&] { return r->stats().completed == 20; });
  CAF_CHECK_EQUAL(count("completed"), 20);
  auto stats = r->stats();
  CAF_CHECK_EQUAL(stats.claimed, 20);
  CAF_CHECK_EQUAL(stats.failed, 0);
  CAF_CHECK_EQUAL(stats.released, 0);
  r->stop();
}

CAF_TEST(outcomes after the shutdown timeout are still written) {
  // As a new user tried it: lease 3 s, shutdown timeout 1.5 s. Handlers
  // that honour their cancel return at once when the timeout passes: the
  // one that finishes its work is completed, the one that gives up goes
  // back to the queue without using up an attempt. Nothing waits for the
  // lease.
  auto tasks = std::make_shared<registry>();
  // Both handlers must have started when the stop comes: a claimed attempt
  // that has not started yet is given back by the stop (claim ahead), and
  // the row reads `running` from the claim on.
  auto started = std::make_shared<std::atomic<int>>(0);
  auto until_cancelled = [started](bool finish) {
    return [finish, started](current_task& t) -> caf::error {
      ++*started;
      while (!t.cancelled())
        std::this_thread::sleep_for(1ms);
      if (finish)
        return caf::error{};
      return make_error(errc::handler_failed, "interrupted");
    };
  };
  tasks->add({"finishes", until_cancelled(true), {}});
  tasks->add({"gives_up", until_cancelled(false), {}});
  auto done = spawn_builder{"finishes"}.spawn(*conn);
  auto back = spawn_builder{"gives_up"}.spawn(*conn);
  CAF_REQUIRE(done && back);
  auto cfg = config(tasks);
  cfg.lease = 3s;
  cfg.keep_alive_interval = 1s;
  cfg.request_timeout = 1500ms;
  cfg.shutdown_timeout = 1500ms;
  auto r = start(cfg);
  wait_for([&] { return *started == 2; });
  r->stop();
  CAF_CHECK_EQUAL(state_of(*conn, done->id), "completed");
  CAF_CHECK_EQUAL(state_of(*conn, back->id), "pending");
  CAF_CHECK_EQUAL(
    query_value<int>("SELECT attempt FROM cafmq.tasks WHERE id = '"
                     + to_string(back->id) + "'"),
    0);
  // The counters stay readable after the stop.
  CAF_CHECK_EQUAL(r->stats().claimed, 2);
}

CAF_TEST(a request timeout that a hung renewal would outlast is refused) {
  auto tasks = std::make_shared<registry>();
  tasks->add({"noop", [](current_task&) { return caf::error{}; }, {}});
  auto cfg = config(tasks);
  cfg.lease = 30s;
  cfg.keep_alive_interval = 10s;
  cfg.request_timeout = 20s;
  auto refused = actors::runner::start(cfg);
  CAF_REQUIRE(!refused);
  CAF_CHECK_EQUAL(code_of(refused.error()), errc::invalid_argument);
  auto text = render(refused.error());
  CAF_MESSAGE(text);
  for (auto word : {"request-timeout (20000 ms)", "lease (30000 ms)",
                    "keep-alive-interval (10000 ms)"})
    CAF_CHECK(text.find(word) != std::string::npos);
  // The defaults keep the rule.
  CAF_CHECK(actors::runner_config{}.request_timeout
            < actors::runner_config{}.lease
                - actors::runner_config{}.keep_alive_interval);
}

CAF_TEST(a prune blocked on a lock for longer than the lease costs no lease) {
  // A finished task past its retention, its row locked by a transaction
  // that stays open: the runner's prune waits for that lock (the watchdog
  // drops it after the request timeout, and the next one waits again)
  // while two tasks run for more than twice their lease.
  auto old = spawn_builder{"hold"}.spawn(*conn)->id;
  {
    pqxx::work tx{*conn};
    finish_by_hand(tx, "id = '" + to_string(old) + "'", "completed",
                   "finished_at = now() - interval '2 days'");
    tx.commit();
  }
  pqxx::connection locker{url};
  pqxx::work lock{locker};
  lock.exec("SELECT 1 FROM cafmq.tasks_history WHERE id = '" + to_string(old)
            + "' FOR UPDATE");
  std::atomic<int> runs{0};
  auto tasks = std::make_shared<registry>();
  tasks->add({"hold",
              [&](current_task& t) {
                ++runs;
                auto until = std::chrono::steady_clock::now() + 7s;
                while (std::chrono::steady_clock::now() < until
                       && !t.cancelled())
                  std::this_thread::sleep_for(5ms);
                return t.cancelled() ? make_error(errc::handler_failed, "lost")
                                     : caf::error{};
              },
              {}});
  auto cfg = config(tasks);
  cfg.lease = 3s;
  cfg.keep_alive_interval = 500ms;
  cfg.request_timeout = 2s;
  cfg.retention = 1h;
  cfg.maintenance_interval = 100ms;
  auto r = start(cfg);
  auto prune_waits = [&] {
    return query_value<int>("SELECT count(*) FROM pg_stat_activity WHERE "
                            "application_name = 'cafmq admin' AND "
                            "wait_event_type = 'Lock'")
           == 1;
  };
  wait_for(prune_waits);
  auto ids
    = spawn_or_throw(*conn, {spawn_builder{"hold"}, spawn_builder{"hold"}});
  // How long the prune was seen waiting while the tasks ran.
  std::chrono::steady_clock::duration waited{0};
  auto last = std::chrono::steady_clock::now();
  wait_for([&] {
    auto now = std::chrono::steady_clock::now();
    if (prune_waits())
      waited += now - last;
    last = now;
    std::this_thread::sleep_for(20ms);
    return count("completed") == 3;
  });
  CAF_MESSAGE(
    "the prune waited for the lock about "
    << std::chrono::duration_cast<std::chrono::milliseconds>(waited).count()
    << " ms of the run");
  CAF_CHECK_GREATER(waited, cfg.lease);
  CAF_CHECK_EQUAL(runs.load(), 2);
  CAF_CHECK_EQUAL(r->stats().lost, 0);
  for (auto& x : ids)
    CAF_CHECK_EQUAL(query_value<int>("SELECT attempt FROM cafmq.tasks WHERE "
                                     "id = '"
                                     + to_string(x.id) + "'"),
                    1);
  lock.abort();
  r->stop();
}

CAF_TEST(a stop does not wait for handlers that ignore their cancel) {
  // Its first attempt ignores the cancel until the test lets it go; a
  // second attempt finishes at once.
  // Shared: the first attempt's thread outlives its runner.
  auto release = std::make_shared<std::atomic<bool>>(false);
  auto entered = std::make_shared<std::atomic<bool>>(false);
  auto returned = std::make_shared<std::atomic<bool>>(false);
  auto tasks = std::make_shared<registry>();
  tasks->add({"stuck",
              [release, entered, returned](current_task& t) -> caf::error {
                if (t.attempt() > 1)
                  return caf::error{};
                *entered = true;
                while (!*release)
                  std::this_thread::sleep_for(1ms);
                *returned = true;
                return caf::error{};
              },
              {}});
  auto id = spawn_builder{"stuck"}.spawn(*conn)->id;
  auto cfg = config(tasks);
  cfg.node = "first";
  cfg.shutdown_timeout = 500ms;
  cfg.handler_grace = 200ms;
  auto r = start(cfg);
  wait_for([&] { return entered->load(); });
  auto t0 = std::chrono::steady_clock::now();
  r->stop();
  r.reset();
  auto took = std::chrono::steady_clock::now() - t0;
  CAF_MESSAGE(
    "stop and destruction took "
    << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
    << " ms");
  // Stop and destruction returned while the handler was still inside: it
  // returns only once the test releases it, below.
  CAF_CHECK(entered->load() && !returned->load());
  // Its attempt was handed back: the lease has expired, and another runner
  // takes it at once, as attempt 2.
  CAF_CHECK(query_value<bool>("SELECT run_at <= now() FROM cafmq.tasks WHERE "
                              "id = '"
                              + to_string(id) + "'"));
  cfg.node = "second";
  auto r2 = start(cfg);
  wait_for([&] { return count("completed") == 1; });
  // The first attempt returns late: its outcome is not written over the
  // second's.
  *release = true;
  wait_for([&] { return returned->load(); });
  r2->stop();
  auto st = status(*conn, id);
  CAF_REQUIRE(st);
  CAF_CHECK_EQUAL(to_string(st->state), "completed");
  CAF_CHECK_EQUAL(st->attempt, 2);
  CAF_CHECK_EQUAL(query_value<std::string>("SELECT node FROM cafmq.tasks WHERE "
                                           "id = '"
                                           + to_string(id) + "'"),
                  "second");
}

CAF_TEST(a blocking handler does not stall the runtime) {
  std::atomic<bool> release{false};
  auto tasks = std::make_shared<registry>();
  tasks->add({"block", blocks_until(release), {}});
  tasks->add({"quick", [](current_task&) { return caf::error{}; }, {}});
  auto r = start(config(tasks));
  spawn_or_throw(*conn, {spawn_builder{"block"}});
  wait_for([&] { return count("running") == 1; });
  std::vector<spawn_builder> quick(50, spawn_builder{"quick"});
  for (auto& x : quick)
    x.id(uuid::random());
  spawn_or_throw(*conn, quick);
  wait_for([&] { return count("completed") == 50; });
  CAF_CHECK_EQUAL(count("running"), 1);
  release = true;
  wait_for([&] { return count("completed") == 51; });
}

CAF_TEST(the runner claims again after its connections were killed) {
  auto tasks = std::make_shared<registry>();
  tasks->add({"t", [](current_task&) { return caf::error{}; }, {}});
  auto r = start(config(tasks));
  auto first = spawn_builder{"t"}.spawn(*conn);
  CAF_REQUIRE(first);
  wait_for([&] { return count("completed") == 1; });
  // Kill every other backend of this database: the listener's LISTEN
  // connection and the database actors' connections.
  auto killed = query_value<int>(
    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE "
    "datname = current_database() AND pid <> pg_backend_pid()");
  // At least the two database actors' connections (the listener's too,
  // once it has connected).
  CAF_CHECK_GREATER_OR_EQUAL(killed, 2);
  // With no poll backstop (max_poll_wait 1 h) only a rebuilt listener (and
  // its rescan, or a notification) can pick this up.
  auto second = spawn_builder{"t"}.spawn(*conn);
  CAF_REQUIRE(second);
  wait_for([&] { return count("completed") == 2; });
}

CAF_TEST(a notification wakes an idle runner) {
  std::atomic<long long> started_us{0};
  auto tasks = std::make_shared<registry>();
  tasks->add({"t",
              [&](current_task&) {
                started_us
                  = std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count();
                return caf::error{};
              },
              {}});
  auto cfg = config(tasks);
  auto r = start(cfg);
  // Idle: its first claim found nothing, and only a notification (or a
  // poll after max_poll_wait, an hour) makes it claim again.
  wait_for([&] { return r->stats().claims >= 1; });
  auto before = std::chrono::steady_clock::now();
  CAF_REQUIRE(spawn_builder{"t"}.spawn(*conn));
  wait_for([&] { return started_us.load() != 0; });
  auto latency = started_us.load()
                 - std::chrono::duration_cast<std::chrono::microseconds>(
                     before.time_since_epoch())
                     .count();
  // How soon is for the benchmarks; reported for the record.
  CAF_MESSAGE("spawn to handler start on an idle runner: " << latency << " us");
  // Woken by the notification, not by the hourly poll (wait_for would have
  // failed the test long before that poll).
  CAF_CHECK(std::chrono::microseconds{latency} < cfg.max_poll_wait);
  CAF_CHECK_GREATER_OR_EQUAL(r->stats().claims, 2);
}

CAF_TEST(cancelling a running task stops its handler and ends it cancelled) {
  using clock = std::chrono::steady_clock;
  std::atomic<long long> fired_at{0};
  auto tasks = std::make_shared<registry>();
  tasks->add({"wait",
              [&](current_task& task) {
                task.on_cancel(
                  [&] { fired_at = clock::now().time_since_epoch().count(); });
                while (!task.cancelled())
                  std::this_thread::sleep_for(1ms);
                return make_error(errc::handler_failed, "stopped");
              },
              {}});
  auto r = start(config(tasks));
  auto id = spawn_builder{"wait"}.retries(5).spawn(*conn)->id;
  wait_for([&] { return count("running") == 1; });
  auto before = clock::now().time_since_epoch().count();
  auto result = cancel(*conn, id);
  CAF_REQUIRE(result);
  CAF_CHECK_EQUAL(to_string(*result), "requested");
  wait_for([&] { return count("cancelled") == 1; });
  CAF_CHECK_GREATER(fired_at.load(), 0);
  CAF_MESSAGE("cancel() to token fired: " << (fired_at.load() - before) / 1000
                                          << " us");
  auto st = status(*conn, id);
  CAF_CHECK_EQUAL(st->attempt, 1); // not retried
}

CAF_TEST(a cancelled task that waits for a thread ends without running) {
  std::atomic<bool> release{false};
  std::atomic<int> quick_runs{0};
  auto tasks = std::make_shared<registry>();
  tasks->add({"block", blocks_until(release), {}});
  tasks->add({"quick",
              [&](current_task&) {
                ++quick_runs;
                return caf::error{};
              },
              {}});
  auto cfg = config(tasks);
  cfg.min_concurrency = 1;
  cfg.max_concurrency = 1; // one thread
  cfg.prefetch = 10;
  cfg.prefetch_window = 0ms;
  auto r = start(cfg);
  spawn_builder{"block"}.spawn(*conn);
  wait_for([&] { return count("running") == 1; });
  auto id = spawn_builder{"quick"}.spawn(*conn)->id;
  // Claimed ahead: it waits in the runner for the only thread.
  wait_for([&] { return count("running") == 2; });
  auto result = cancel(*conn, id);
  CAF_REQUIRE(result);
  CAF_CHECK_EQUAL(to_string(*result), "requested");
  wait_for([&] { return state_of(*conn, id) == "cancelled"; });
  release = true;
  wait_for([&] { return count("completed") == 1; });
  CAF_CHECK_EQUAL(quick_runs.load(), 0);
}

CAF_TEST(a handler past its timeout is stopped and retried) {
  auto tasks = std::make_shared<registry>();
  tasks->add({"slow",
              [&](current_task& task) -> caf::error {
                if (task.attempt() > 1)
                  return caf::none;
                while (!task.cancelled())
                  std::this_thread::sleep_for(1ms);
                return caf::none; // ignoring the timeout does not help
              },
              {}});
  auto r = start(config(tasks));
  auto id = spawn_builder{"slow"}.timeout(200ms).backoff(10ms).spawn(*conn)->id;
  wait_for([&] { return count("completed") == 1; });
  auto st = status(*conn, id);
  CAF_CHECK_EQUAL(st->attempt, 2);
  CAF_REQUIRE(st->last_error.has_value());
  CAF_CHECK(st->last_error->find("timeout") != std::string::npos);
}

CAF_TEST(a custom failure filter extends the default one) {
  // Decodes an int; 0 is a fatal error that only the task's filter knows.
  auto handler = [](current_task& task) -> caf::error {
    auto x = task.json<int>();
    if (!x)
      return std::move(x.error());
    if (*x == 0)
      return make_error(errc::handler_failed, "fatal");
    return make_error(errc::handler_failed, "try again");
  };
  task_definition own{"own_filter", handler, {}};
  own.is_failure = [](const caf::error& err) {
    return render(err).find("fatal") != std::string::npos;
  };
  auto tasks = std::make_shared<registry>();
  tasks->add(own);
  tasks->add({"runner_filter", handler, {}});
  auto cfg = config(tasks);
  cfg.is_failure = [](const caf::error&) {
    return false;
  };
  auto r = start(cfg);
  std::vector<spawn_builder> xs{
    spawn_builder{"own_filter"}.raw_json("\"not a number\""),
    spawn_builder{"runner_filter"}.raw_json("\"not a number\""),
    spawn_builder{"own_filter"}.json(0),
    spawn_builder{"own_filter"}.json(1),
  };
  for (auto& x : xs)
    x.retries(3).backoff(1h);
  auto ids = spawn_or_throw(*conn, xs);
  // Each first attempt ends: failed, or pending again for a retry.
  wait_for([&] {
    return query_value<int>("SELECT count(*) FROM cafmq.tasks WHERE attempt "
                            "= 1 AND state IN ('failed', 'pending')")
           == 4;
  });
  // A payload the handler cannot decode stays definitive with either
  // filter; the task's filter adds its own definitive errors.
  CAF_CHECK_EQUAL(state_of(*conn, ids[0].id), "failed");
  CAF_CHECK_EQUAL(state_of(*conn, ids[1].id), "failed");
  CAF_CHECK_EQUAL(state_of(*conn, ids[2].id), "failed");
  CAF_CHECK_EQUAL(state_of(*conn, ids[3].id), "pending");
}

CAF_TEST(results stored by handlers are written with their completions) {
  auto tasks = std::make_shared<registry>();
  tasks->add({"square",
              [](current_task& task) {
                auto x = task.json<int>();
                if (!x)
                  return x.error();
                if (*x % 2 == 0)
                  return task.set_result(
                    std::map<std::string, int>{{"square", *x * *x}});
                return caf::error{};
              },
              {}});
  task_definition quick{
    "quick_square",
    [](current_task& task) { return task.set_raw_result("[1, 2]"); },
    {}};
  quick.blocking = false;
  tasks->add(quick);
  std::vector<spawn_builder> xs;
  for (int i = 0; i < 40; ++i)
    xs.push_back(spawn_builder{"square"}.json(i));
  xs.push_back(spawn_builder{"quick_square"});
  auto ids = spawn_or_throw(*conn, xs);
  auto r = start(config(tasks));
  wait_for([&] { return count("completed") == 41; });
  // Even payloads stored a result, odd ones none; in mixed batches.
  for (int i = 0; i < 40; ++i) {
    auto st = status(*conn, ids[i].id);
    CAF_REQUIRE(st);
    if (i % 2 == 0) {
      auto want = "{\"square\": " + std::to_string(i * i) + "}";
      CAF_CHECK_EQUAL(st->result.value_or("none"), want);
    } else {
      CAF_CHECK(!st->result);
    }
  }
  auto st = status(*conn, ids[40].id);
  CAF_REQUIRE(st);
  CAF_CHECK_EQUAL(st->result.value_or("none"), "[1, 2]");
}

CAF_TEST(a task definition with a schedule registers it and its ticks run) {
  std::atomic<int> runs{0};
  auto tasks = std::make_shared<registry>();
  task_definition beat{"beat",
                       [&](current_task&) {
                         ++runs;
                         return caf::error{};
                       },
                       {}};
  beat.schedule = periodic::interval(1s);
  beat.schedule_payload = R"({"from": "definition"})";
  tasks->add(beat);
  auto cfg = config(tasks);
  cfg.schedule_interval = 200ms;
  auto r = start(cfg);
  wait_for([&] { return runs >= 2; });
  auto xs = list_schedules(*conn);
  CAF_REQUIRE(xs && xs->size() == 1u);
  CAF_CHECK_EQUAL(xs->at(0).name, "beat");
  CAF_CHECK_EQUAL(xs->at(0).task_name, "beat");
  CAF_CHECK(xs->at(0).ticks >= 2);
  CAF_CHECK_EQUAL(query_value<std::string>(
                    "SELECT DISTINCT payload_json::text FROM cafmq.tasks "
                    "WHERE name = 'beat'"),
                  R"({"from": "definition"})");
}

CAF_TEST(a task declared without a handler runs only as a remote task) {
  auto declared = std::make_shared<registry>();
  declared->declare("far");
  auto started = actors::runner::start(config(declared));
  CAF_REQUIRE(!started);
  CAF_CHECK_EQUAL(code_of(started.error()), errc::invalid_argument);
  CAF_CHECK(render(started.error()).find("remote_tasks") != std::string::npos);
}

CAF_TEST(a task definition with a bad schedule is refused at start) {
  auto tasks = std::make_shared<registry>();
  task_definition beat{"beat", [](current_task&) { return caf::error{}; }, {}};
  beat.schedule = periodic::at("0 0 31 4 *");
  tasks->add(beat);
  auto started = actors::runner::start(config(tasks));
  CAF_REQUIRE(!started);
  CAF_CHECK_EQUAL(code_of(started.error()), errc::invalid_argument);
  tasks = std::make_shared<registry>();
  beat.schedule = periodic::at("0 0 * * mon-funday");
  tasks->add(beat);
  started = actors::runner::start(config(tasks));
  CAF_REQUIRE(!started);
  CAF_CHECK_EQUAL(code_of(started.error()), errc::invalid_argument);
}

CAF_TEST(the runner compacts the live table once a held snapshot ends) {
  std::mutex mtx;
  std::vector<std::string> messages;
  auto logged = [&](const std::string& text) {
    std::lock_guard<std::mutex> guard{mtx};
    for (auto& x : messages)
      if (x.find(text) != std::string::npos)
        return true;
    return false;
  };
  auto tasks = std::make_shared<registry>();
  // Not "t": the churn below inserts tasks of that name.
  tasks->add({"work", [](current_task&) { return caf::error{}; }, {}});
  auto cfg = config(tasks);
  cfg.maintenance_interval = 200ms;
  cfg.compact_after_hold = 1s;
  cfg.log = [&](const log_record& x) {
    std::lock_guard<std::mutex> guard{mtx};
    messages.push_back(x.message);
  };
  auto r = start(cfg);
  auto other = connect();
  auto held = std::make_unique<pqxx::work>(*other);
  held->exec0("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
  held->exec1("SELECT count(*) FROM cafmq.tasks_live");
  // A day's claims and endings while it is held: dead entries that stay.
  for (int i = 0; i < 3; ++i) {
    insert_backlog(*conn, "churn", 20000);
    pqxx::work tx{*conn};
    finish_by_hand(tx, "t.channel_name = 'churn'", "completed");
    tx.commit();
  }
  auto pkey_held
    = query_value<std::int64_t>("SELECT pg_relation_size('cafmq.tasks_pkey')");
  CAF_REQUIRE_GREATER(pkey_held, std::int64_t{1} << 20);
  wait_for([&] { return logged("a transaction keeps vacuum"); });
  CAF_CHECK(!logged("live table compacted"));
  held->commit();
  held.reset();
  wait_for([&] { return logged("live table compacted"); });
  auto pkey_after
    = query_value<std::int64_t>("SELECT pg_relation_size('cafmq.tasks_pkey')");
  CAF_MESSAGE("primary key: " << pkey_held << " B held, " << pkey_after
                              << " B after the compaction");
  CAF_CHECK_LESS(pkey_after, pkey_held / 10);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM pg_index WHERE "
                                   "indrelid = 'cafmq.tasks_live'::regclass "
                                   "AND NOT indisvalid"),
                  0);
  // The runner goes on through the rebuilt indexes.
  spawn_or_throw(*conn, std::vector<spawn_builder>(5, spawn_builder{"work"}));
  wait_for([&] {
    return query_value<int>("SELECT count(*) FROM cafmq.tasks WHERE name = "
                            "'work' AND state = 'completed'")
           == 5;
  });
  r->stop();
}

CAF_TEST_FIXTURE_SCOPE_END()
