// SPDX-License-Identifier: BSD-3-Clause
// `cafmq-e2e runner`: a runner process for the e2e tests. It runs the task
// "record", which writes (id, attempt, node, channel, payload, start, end)
// into e2e_runs in the same transaction that completes the attempt, and
// "wait_cancel", which works until it is cancelled, and "die", which takes
// the whole process down (abort) like a handler that crashes it, and
// "hold", which records its start in e2e_starts, works `payload` ms in its
// first attempt (long enough to be killed mid-attempt) and then records
// like "record", and "gate", which records its start like "hold", waits
// (a minute at most) until the SQL condition in its payload
// ({"until": "...", "ms": N}) holds and N ms more, then records like
// "record" with payload 0: a handler that waits for an event other
// runners cause, so that a test need not hope for an interleaving, and
// "fail_always", whose every attempt fails (retryable) after 50 ms; it
// exits once no live task is left. With
// CAFMQ_E2E_PIDFILE set it writes its pid there once its runner started.
// With CAFMQ_E2E_STOP_AFTER_MS set it stops after that long instead
// (shutdown timeout 300 ms, handler grace 100 ms), and "ignore_cancel"
// never returns: a handler that ignores its cancel. With CAFMQ_E2E_SIGNALS
// set it runs until SIGINT or SIGTERM (runner::wait_for_signal), which it
// blocks from the start so that a signal sent early waits for that call.
// With CAFMQ_E2E_METRICS set it serves its metrics there
// (runner_config::metrics_listen), reading the queue-level gauges every
// CAFMQ_E2E_METRICS_QUEUE_MS if set (also its dashboard's chart interval);
// with CAFMQ_E2E_DASHBOARD set it serves its dashboard there (loopback, no
// token). With CAFMQ_E2E_SCHEDULE_MS set it
// fires the due schedules that often (0: never, a runner that only drains
// what the schedules spawned), with CAFMQ_E2E_PREFETCH set it claims that
// many ahead at most (0: only for free slots). With CAFMQ_E2E_SPAWN_HOLD=N
// it spawns N "hold" tasks (one retry, 60 s of work) through its own
// runtime actor once it started, one at a time (direct dispatch while a
// handler is free), and writes each id to CAFMQ_E2E_SPAWN_LOG if set.
//
//   cafmq-e2e runner URL NODE MIN MAX [LEASE_MS]

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <thread>

#include <csignal>

#include <pqxx/pqxx>
#include <pthread.h>
#include <unistd.h>

#include <caf/all.hpp>

#include "cafmq/actors/protocol.hpp"
#include "cafmq/actors/runner.hpp"
#include "cafmq/current_task.hpp"
#include "cafmq/error.hpp"

#include "common.hpp"
#include "tasks.hpp"

namespace cafmq::e2e {

namespace {

std::string url;
std::string node;

// CAFMQ_E2E_DROP_BROKEN: a failed completion drops a broken connection at
// once, while its transaction is still in scope, as a handler that
// reconnects eagerly does (a runner crashed on this during a server
// restart, issue 30, before complete(tx) ended the transaction itself).
bool drop_broken = false;

// The handler thread's own connection.
std::unique_ptr<pqxx::connection>& connection_slot() {
  thread_local std::unique_ptr<pqxx::connection> conn;
  return conn;
}

// Replaces a broken connection before a transaction opens on it: libpqxx
// 6.4 reopens one when a transaction sends BEGIN, but a nontransaction's
// exec_params would fail on it for ever.
pqxx::connection& connection() {
  auto& conn = connection_slot();
  if (!conn || !conn->is_open())
    conn = std::make_unique<pqxx::connection>(url);
  return *conn;
}

// Writes the run to e2e_runs in the transaction that completes the attempt.
caf::error record_as(current_task& task, const std::string& payload) {
  return guarded([&]() -> caf::error {
    pqxx::work tx{connection()};
    tx.exec_params0("INSERT INTO e2e_runs (id, attempt, node, channel, "
                    "payload, started, finished) VALUES ($1::uuid, $2, $3, "
                    "$4, $5::int, now(), clock_timestamp())",
                    to_string(task.id()), task.attempt(), node,
                    task.data().channel_name + "/" + task.data().channel_args,
                    payload);
    auto err = task.complete(tx);
    if (err && drop_broken && !connection_slot()->is_open())
      connection_slot().reset();
    return err;
  });
}

caf::error record(current_task& task) {
  return record_as(task, task.raw_json().value_or("0"));
}

caf::error record_start(current_task& task) {
  return guarded([&]() -> caf::error {
    pqxx::nontransaction{connection()}.exec_params0(
      "INSERT INTO e2e_starts (id, attempt, node, at) VALUES ($1::uuid, $2, "
      "$3, clock_timestamp())",
      to_string(task.id()), task.attempt(), node);
    return caf::none;
  });
}

// Works for `ms`, or until cancelled.
void work_for(current_task& task, std::chrono::milliseconds ms) {
  auto until = std::chrono::steady_clock::now() + ms;
  while (std::chrono::steady_clock::now() < until && !task.cancelled())
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
}

caf::error hold(current_task& task) {
  if (auto err = record_start(task))
    return err;
  if (task.attempt() == 1)
    work_for(task, std::chrono::milliseconds{
                     std::stoi(task.raw_json().value_or("0"))});
  return record(task);
}

caf::error gate(current_task& task) {
  auto spec = task.json<nlohmann::json>();
  if (!spec)
    return spec.error();
  auto condition = spec->value("until", std::string{"true"});
  auto ms = spec->value("ms", 0);
  if (auto err = record_start(task))
    return err;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes{1};
  for (;;) {
    bool holds = false;
    if (auto err = guarded([&]() -> caf::error {
          holds = pqxx::nontransaction{connection()}
                    .exec1("SELECT (" + condition + ")::bool")[0]
                    .as<bool>();
          return caf::none;
        }))
      return err;
    if (holds || task.cancelled()
        || std::chrono::steady_clock::now() > deadline)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
  }
  work_for(task, std::chrono::milliseconds{ms});
  return record_as(task, "0");
}

caf::error ignore_cancel(current_task&) {
  for (;;)
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
}

// Fails every attempt (retryable), after a moment of work.
caf::error fail_always(current_task& task) {
  work_for(task, std::chrono::milliseconds{50});
  return make_error(errc::database,
                    "attempt " + std::to_string(task.attempt()) + " fails");
}

caf::error die(current_task&) {
  std::abort();
}

std::optional<std::chrono::milliseconds> env_ms(const char* name) {
  if (auto value = std::getenv(name))
    return std::chrono::milliseconds{std::atoi(value)};
  return std::nullopt;
}

// Every thread started from here on inherits the mask.
void block_stop_signals() {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
}

// Waits until no live task is left; survives a restart of the server.
void wait_until_drained() {
  std::unique_ptr<pqxx::connection> conn;
  for (int i = 0; i < 6000; ++i) {
    try {
      if (!conn || !conn->is_open())
        conn = std::make_unique<pqxx::connection>(url);
      pqxx::nontransaction tx{*conn};
      auto live
        = tx.exec1("SELECT count(*) FROM cafmq.tasks_live")[0].as<long>();
      if (live == 0)
        return;
    } catch (const std::exception&) {
      conn.reset();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{50});
  }
}

// Spawns `n` "hold" tasks through the runtime actor `rt`, one at a time.
caf::error spawn_through(const actors::runtime_actor& rt, int n) {
  auto& sys = caf::actor_cast<caf::actor>(rt)->home_system();
  caf::scoped_actor self{sys};
  std::ofstream out;
  if (auto path = std::getenv("CAFMQ_E2E_SPAWN_LOG"))
    out.open(path, std::ios::app);
  for (int i = 0; i < n; ++i) {
    actors::spawn_request req;
    req.name = "hold";
    req.retries = 1;
    req.json = "60000";
    caf::error err;
    self->request(rt, std::chrono::seconds{30}, actors::spawn_atom::value, req)
      .receive(
        [&](const actors::spawn_reply& x) {
          if (out.is_open())
            out << to_string(x.id) << std::endl;
        },
        [&](caf::error& e) { err = std::move(e); });
    if (err)
      return err;
  }
  return caf::none;
}

} // namespace

int run_runner(const arguments& args) {
  url = args[0];
  node = args[1];
  drop_broken = std::getenv("CAFMQ_E2E_DROP_BROKEN") != nullptr;
  auto on_signals = std::getenv("CAFMQ_E2E_SIGNALS") != nullptr;
  if (on_signals)
    block_stop_signals();
  auto tasks = std::make_shared<registry>();
  tasks->add({"record", record, {}});
  tasks->add({"wait_cancel", wait_cancel, {}});
  tasks->add({"die", die, {}});
  tasks->add({"fail_always", fail_always, {}});
  tasks->add({"hold", hold, {}});
  tasks->add({"gate", gate, {}});
  tasks->add({"ignore_cancel", ignore_cancel, {}});
  actors::runner_config cfg;
  cfg.database_url = url;
  cfg.node = node;
  cfg.tasks = tasks;
  cfg.min_concurrency = std::stoi(args[2]);
  cfg.max_concurrency = std::stoi(args[3]);
  if (auto listen = std::getenv("CAFMQ_E2E_METRICS"))
    cfg.metrics_listen = listen;
  if (auto listen = std::getenv("CAFMQ_E2E_DASHBOARD"))
    cfg.dashboard_listen = listen;
  if (auto ms = env_ms("CAFMQ_E2E_METRICS_QUEUE_MS"))
    cfg.metrics_queue_interval = *ms;
  if (auto ms = env_ms("CAFMQ_E2E_SCHEDULE_MS"))
    cfg.schedule_interval = *ms;
  if (auto n = std::getenv("CAFMQ_E2E_PREFETCH"))
    cfg.prefetch = std::atoi(n);
  auto stop_after = env_ms("CAFMQ_E2E_STOP_AFTER_MS");
  if (stop_after) {
    cfg.shutdown_timeout = std::chrono::milliseconds{300};
    cfg.handler_grace = std::chrono::milliseconds{100};
  }
  if (args.size() == 5) {
    cfg.lease = std::chrono::milliseconds{std::stoi(args[4])};
    cfg.keep_alive_interval = cfg.lease / 3;
    cfg.request_timeout = cfg.lease / 2;
  }
  auto runner = actors::runner::start(cfg);
  if (!runner)
    return fail(node, runner.error());
  if (auto pidfile = std::getenv("CAFMQ_E2E_PIDFILE"))
    publish(pidfile, std::to_string(getpid()) + "\n");
  if (auto n = std::getenv("CAFMQ_E2E_SPAWN_HOLD"))
    if (auto err = spawn_through((*runner)->handle(), std::atoi(n)))
      return fail(node, err);
  if (on_signals) {
    auto sig = (*runner)->wait_for_signal();
    if (!sig)
      return fail(node, sig.error());
    std::cout << node << ": stopped by signal " << *sig << std::endl;
    return *sig != 0 ? 0 : 1;
  }
  if (stop_after) {
    std::this_thread::sleep_for(*stop_after);
    (*runner)->stop();
    std::cout << node << ": stopped" << std::endl;
    return 0;
  }
  wait_until_drained();
  auto stats = (*runner)->stats();
  (*runner)->stop();
  std::cout << node << ": claimed " << stats.claimed << " in " << stats.claims
            << " claims\n";
  return 0;
}

} // namespace cafmq::e2e
