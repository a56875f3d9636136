// SPDX-License-Identifier: BSD-3-Clause
// `cafmq-e2e isolated`: a runner with isolated tasks for the process
// isolation e2e test. Its worker processes are this program again, started
// with the same arguments (serve_worker_process before anything else).
// Every handler appends "ID ATTEMPT PID WHAT" to DIR/ledger (one write with
// O_APPEND: whole lines, kept by the kernel when the process dies right
// after):
// - "crash" (isolated): on attempts below its JSON payload's "until" it
//   writes "crashing" and dies by the payload's "how" ("abort" or "segv");
//   then it writes "done".
// - "isolated_ok" (isolated) and "local_ok" (in the runner) write "done".
// - "isolated_tx" (isolated) inserts (id, attempt, pid) into the table
//   isolated_tx_ledger and completes its attempt in that transaction, on a
//   connection of its own to URL.
// The runner writes its pid to DIR/pid once started, runs until DIR/stop
// exists, then stops gracefully and prints "STOPPED".
//
//   cafmq-e2e isolated URL DIR

#include <csignal>
#include <cstdlib>
#include <iostream>

#include <unistd.h>

#include <pqxx/pqxx>

#include "cafmq/actors/isolation.hpp"
#include "cafmq/actors/runner.hpp"
#include "cafmq/current_task.hpp"
#include "cafmq/error.hpp"

#include "common.hpp"
#include "tasks.hpp"

namespace cafmq::e2e {

namespace {

std::string dir;
std::string url;

caf::error record(current_task& task, const std::string& what) {
  static ledger book{dir + "/ledger"};
  return book.add(task, std::to_string(getpid()) + " " + what);
}

caf::error done(current_task& task) {
  return record(task, "done");
}

caf::error crash(current_task& task) {
  auto args = task.json<nlohmann::json>();
  if (!args)
    return args.error();
  if (task.attempt() < (*args)["until"].get<int>()) {
    if (auto err = record(task, "crashing"))
      return err;
    if ((*args)["how"] == "segv")
      std::raise(SIGSEGV);
    std::abort();
  }
  return done(task);
}

caf::error complete_in_tx(current_task& task) {
  try {
    pqxx::connection own{url};
    pqxx::work tx{own};
    tx.exec_params0("INSERT INTO isolated_tx_ledger VALUES ($1::uuid, $2, $3)",
                    to_string(task.id()), task.attempt(),
                    static_cast<long>(getpid()));
    return task.complete(tx);
  } catch (const std::exception& e) {
    return make_error(errc::handler_failed, e.what());
  }
}

} // namespace

int run_isolated(const arguments& args) {
  url = args[0];
  dir = args[1];
  auto tasks = std::make_shared<registry>();
  task_definition crashing{"crash", crash, {}};
  crashing.isolated = true;
  crashing.defaults.backoff = std::chrono::milliseconds{10};
  tasks->add(crashing);
  task_definition away{"isolated_ok", done, {}};
  away.isolated = true;
  tasks->add(away);
  tasks->add({"local_ok", done, {}});
  task_definition in_tx{"isolated_tx", complete_in_tx, {}};
  in_tx.isolated = true;
  tasks->add(in_tx);
  actors::runner_config cfg;
  cfg.database_url = args[0];
  cfg.node = "isolating";
  cfg.tasks = tasks;
  cfg.worker_processes = 2;
  cfg.worker_process_capacity = 2;
  // A lease of an hour: an attempt of a crashed worker process that waited
  // out its lease would not end within the test's deadlines, so those show
  // that it failed at once.
  cfg.lease = std::chrono::hours{1};
  cfg.keep_alive_interval = std::chrono::minutes{20};
  // In a worker process: serves the isolated tasks, then exits.
  actors::serve_worker_process(cfg);
  auto runner = actors::runner::start(cfg);
  if (!runner)
    return fail(cfg.node, runner.error());
  publish(dir + "/pid", std::to_string(getpid()));
  wait_for_file(dir + "/stop");
  (*runner)->stop();
  std::cout << "STOPPED" << std::endl;
  return 0;
}

} // namespace cafmq::e2e
