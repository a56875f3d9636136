// SPDX-License-Identifier: BSD-3-Clause
// A runner process for the e2e tests. It runs the task "record", which
// writes (id, attempt, node, channel, payload, start, end) into e2e_runs in
// the same transaction that completes the attempt, and "wait_cancel", which
// works until it is cancelled, and "die", which takes the whole process
// down (abort) like a handler that crashes it, and "hold", which records its
// start in e2e_starts, works `payload` ms in its first attempt (long enough
// to be killed mid-attempt) and then records like "record"; it exits once
// no live task is left. With CAFMQ_E2E_PIDFILE set it writes its pid there
// once its runner started. With CAFMQ_E2E_STOP_AFTER_MS set it stops after
// that long instead (shutdown timeout 300 ms, handler grace 100 ms), and
// "ignore_cancel" never returns: a handler that ignores its cancel. With
// CAFMQ_E2E_SIGNALS set it runs until SIGINT or SIGTERM
// (runner::wait_for_signal), which it blocks from the start so that a
// signal sent early waits for that call. With CAFMQ_E2E_METRICS set it
// serves its metrics there (runner_config::metrics_listen), reading the
// queue-level gauges every CAFMQ_E2E_METRICS_QUEUE_MS if set. With
// CAFMQ_E2E_SCHEDULE_MS set it fires the due schedules that often (0:
// never, a runner that only drains what the schedules spawned), with
// CAFMQ_E2E_PREFETCH set it claims that many ahead at most (0: only for
// free slots).
//
//   cafmq-e2e-runner URL NODE MIN MAX [LEASE_MS]

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <thread>

#include <csignal>

#include <pqxx/pqxx>
#include <pthread.h>
#include <unistd.h>

#include "cafmq/actors/runner.hpp"
#include "cafmq/current_task.hpp"
#include "cafmq/error.hpp"

namespace {

std::string url;
std::string node;

caf::error record(cafmq::current_task& task) {
  // One connection per worker thread.
  thread_local std::unique_ptr<pqxx::connection> conn;
  return cafmq::guarded([&]() -> caf::error {
    if (!conn)
      conn = std::make_unique<pqxx::connection>(url);
    pqxx::work tx{*conn};
    tx.exec_params0("INSERT INTO e2e_runs (id, attempt, node, channel, "
                    "payload, started, finished) VALUES ($1::uuid, $2, $3, "
                    "$4, $5::int, now(), clock_timestamp())",
                    cafmq::to_string(task.id()), task.attempt(), node,
                    task.data().channel_name + "/" + task.data().channel_args,
                    task.raw_json().value_or("0"));
    return task.complete(tx);
  });
}

caf::error wait_cancel(cafmq::current_task& task) {
  while (!task.cancelled())
    std::this_thread::sleep_for(std::chrono::milliseconds{1});
  return cafmq::make_error(cafmq::errc::handler_failed,
                           "stopped: " + to_string(task.cancelled_because()));
}

caf::error hold(cafmq::current_task& task) {
  thread_local std::unique_ptr<pqxx::connection> conn;
  auto started = cafmq::guarded([&]() -> caf::error {
    if (!conn)
      conn = std::make_unique<pqxx::connection>(url);
    pqxx::nontransaction{*conn}.exec_params0(
      "INSERT INTO e2e_starts (id, attempt, node, at) VALUES ($1::uuid, $2, "
      "$3, clock_timestamp())",
      cafmq::to_string(task.id()), task.attempt(), node);
    return caf::none;
  });
  if (started)
    return started;
  if (task.attempt() == 1) {
    auto until
      = std::chrono::steady_clock::now()
        + std::chrono::milliseconds{std::stoi(task.raw_json().value_or("0"))};
    while (std::chrono::steady_clock::now() < until && !task.cancelled())
      std::this_thread::sleep_for(std::chrono::milliseconds{5});
  }
  return record(task);
}

caf::error ignore_cancel(cafmq::current_task&) {
  for (;;)
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
}

caf::error die(cafmq::current_task&) {
  std::abort();
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 5 && argc != 6) {
    std::cerr << "usage: cafmq-e2e-runner URL NODE MIN MAX [LEASE_MS]\n";
    return 2;
  }
  url = argv[1];
  node = argv[2];
  auto on_signals = std::getenv("CAFMQ_E2E_SIGNALS") != nullptr;
  if (on_signals) {
    // Every thread started from here on inherits the mask.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  }
  auto tasks = std::make_shared<cafmq::registry>();
  tasks->add({"record", record, {}});
  tasks->add({"wait_cancel", wait_cancel, {}});
  tasks->add({"die", die, {}});
  tasks->add({"hold", hold, {}});
  tasks->add({"ignore_cancel", ignore_cancel, {}});
  cafmq::actors::runner_config cfg;
  cfg.database_url = url;
  cfg.node = node;
  cfg.tasks = tasks;
  cfg.min_concurrency = std::stoi(argv[3]);
  cfg.max_concurrency = std::stoi(argv[4]);
  if (auto listen = std::getenv("CAFMQ_E2E_METRICS"))
    cfg.metrics_listen = listen;
  if (auto ms = std::getenv("CAFMQ_E2E_METRICS_QUEUE_MS"))
    cfg.metrics_queue_interval = std::chrono::milliseconds{std::atoi(ms)};
  if (auto ms = std::getenv("CAFMQ_E2E_SCHEDULE_MS"))
    cfg.schedule_interval = std::chrono::milliseconds{std::atoi(ms)};
  if (auto n = std::getenv("CAFMQ_E2E_PREFETCH"))
    cfg.prefetch = std::atoi(n);
  auto stop_after = std::getenv("CAFMQ_E2E_STOP_AFTER_MS");
  if (stop_after) {
    cfg.shutdown_timeout = std::chrono::milliseconds{300};
    cfg.handler_grace = std::chrono::milliseconds{100};
  }
  if (argc == 6) {
    cfg.lease = std::chrono::milliseconds{std::stoi(argv[5])};
    cfg.keep_alive_interval = cfg.lease / 3;
  }
  auto runner = cafmq::actors::runner::start(cfg);
  if (!runner) {
    std::cerr << node << ": " << cafmq::render(runner.error()) << '\n';
    return 1;
  }
  if (auto pidfile = std::getenv("CAFMQ_E2E_PIDFILE")) {
    std::ofstream out{pidfile};
    out << getpid() << '\n';
  }
  if (on_signals) {
    auto sig = (*runner)->wait_for_signal();
    if (!sig) {
      std::cerr << node << ": " << cafmq::render(sig.error()) << '\n';
      return 1;
    }
    std::cout << node << ": stopped by signal " << *sig << std::endl;
    return *sig != 0 ? 0 : 1;
  }
  if (stop_after) {
    std::this_thread::sleep_for(
      std::chrono::milliseconds{std::stoi(stop_after)});
    (*runner)->stop();
    std::cout << node << ": stopped" << std::endl;
    return 0;
  }
  // Waits until no live task is left; survives a restart of the server.
  std::unique_ptr<pqxx::connection> conn;
  for (int i = 0; i < 6000; ++i) {
    try {
      if (!conn || !conn->is_open())
        conn = std::make_unique<pqxx::connection>(url);
      pqxx::nontransaction tx{*conn};
      auto live = tx.exec1("SELECT count(*) FROM cafmq.tasks WHERE state IN "
                           "('pending', 'running', 'uncommitted')")[0]
                    .as<long>();
      if (live == 0)
        break;
    } catch (const std::exception&) {
      conn.reset();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{50});
  }
  auto stats = (*runner)->stats();
  (*runner)->stop();
  std::cout << node << ": claimed " << stats.claimed << " in " << stats.claims
            << " claims\n";
  return 0;
}
