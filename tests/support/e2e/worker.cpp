// SPDX-License-Identifier: BSD-3-Clause
// `cafmq-e2e worker`: a worker node process for the e2e tests: no database
// access; it joins the runner node at HOST:PORT and runs "remote_record",
// which appends "id attempt node" to DIR/NODE.ledger before it returns (one
// write with O_APPEND: whole lines, kept by the kernel if the process is
// killed), and "remote_wait_cancel", which writes DIR/ID.started, works
// until it is cancelled and then writes the CLOCK_REALTIME time (ns) at
// which it saw the cancel to DIR/ID.cancelled. Writes its pid to
// DIR/NODE.pid. Exits 0 when the runner lets it go, 1 when the runner is
// lost or refuses it. With URL it also runs "remote_complete_tx", which
// inserts (id, attempt, node) into the table tx_ledger and completes its
// attempt in that transaction, on a connection of its thread to URL; the
// worker is told the database's URL (worker_config::database_url) unless
// WORKER_URL is "none". With CAFMQ_E2E_HOLD_AFTER=N in its environment,
// every handler of the two after the N-th one started never returns (in
// remote_complete_tx, with its transaction open), and the first to hold
// writes DIR/NODE.holding: a test that kills the worker once that file
// exists knows it dies with attempts in hand.
//
//   cafmq-e2e worker HOST PORT SECRET NODE CAPACITY DIR [URL [WORKER_URL]]

#include <atomic>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <thread>

#include <unistd.h>

#include <pqxx/pqxx>

#include "cafmq/actors/worker.hpp"
#include "cafmq/current_task.hpp"
#include "cafmq/error.hpp"

#include "common.hpp"
#include "tasks.hpp"

namespace cafmq::e2e {

namespace {

std::string dir;
std::string node;
std::string url;

// CAFMQ_E2E_HOLD_AFTER, or -1: no handler holds.
int hold_after = -1;
std::atomic<int> handlers_started{0};

// Never returns once `hold_after` handlers started before this one.
void hold_if_due() {
  auto n = handlers_started.fetch_add(1);
  if (hold_after < 0 || n < hold_after)
    return;
  if (n == hold_after)
    publish(dir + "/" + node + ".holding", "1");
  for (;;)
    std::this_thread::sleep_for(std::chrono::hours{1});
}

caf::error remote_complete_tx(current_task& task) {
  thread_local std::unique_ptr<pqxx::connection> own;
  try {
    if (!own || !own->is_open())
      own = std::make_unique<pqxx::connection>(url);
    pqxx::work tx{*own};
    tx.exec_params0("INSERT INTO tx_ledger VALUES ($1::uuid, $2, $3)",
                    to_string(task.id()), task.attempt(), node);
    hold_if_due();
    return task.complete(tx);
  } catch (const std::exception& e) {
    own.reset();
    return make_error(errc::handler_failed, e.what());
  }
}

caf::error remote_record(current_task& task) {
  static ledger book{dir + "/" + node + ".ledger"};
  hold_if_due();
  return book.add(task, node);
}

caf::error remote_wait_cancel(current_task& task) {
  auto id = to_string(task.id());
  publish(dir + "/" + id + ".started", "1");
  until_cancelled(task, std::chrono::microseconds{200});
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  publish(dir + "/" + id + ".cancelled",
          std::to_string(ts.tv_sec * 1'000'000'000LL + ts.tv_nsec));
  return stopped(task);
}

} // namespace

int run_worker(const arguments& args) {
  node = args[3];
  dir = args[5];
  if (auto n = std::getenv("CAFMQ_E2E_HOLD_AFTER"))
    hold_after = std::stoi(n);
  publish(dir + "/" + node + ".pid", std::to_string(getpid()));
  auto tasks = std::make_shared<registry>();
  tasks->add({"remote_record", remote_record, {}});
  tasks->add({"remote_wait_cancel", remote_wait_cancel, {}});
  actors::worker_config cfg;
  if (args.size() > 6) {
    url = args[6];
    tasks->add({"remote_complete_tx", remote_complete_tx, {}});
    if (args.size() < 8 || args[7] != "none")
      cfg.database_url = url;
  }
  cfg.node = node;
  cfg.tasks = tasks;
  cfg.capacity = std::stoi(args[4]);
  actors::node_endpoint where;
  where.host = args[0];
  where.port = static_cast<std::uint16_t>(std::stoi(args[1]));
  where.secret = args[2];
  auto worker = actors::worker_node::start(cfg, where);
  if (!worker)
    return fail(node, worker.error());
  if (auto err = (*worker)->wait_joined(std::chrono::minutes{1}))
    return fail(node, err);
  publish(dir + "/" + node + ".joined", "joined");
  if (auto err = (*worker)->wait()) {
    std::cerr << node << ": worker ended: " << render(err) << '\n';
    return 1;
  }
  std::cout << node << ": let go by its runner\n";
  return 0;
}

} // namespace cafmq::e2e
