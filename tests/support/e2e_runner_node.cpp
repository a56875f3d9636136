// SPDX-License-Identifier: BSD-3-Clause
// A runner node for the remote worker e2e tests: it owns the database,
// runs no handler (it declares the workers' tasks as remote_tasks) and
// publishes its control interface on a free port of
// 127.0.0.1 with SECRET; writes the port to DIR/port and runs until
// DIR/stop exists, then stops gracefully and prints its counters.
//
//   cafmq-e2e-runner-node URL NODE SECRET DIR LEASE_MS

#include <fstream>
#include <iostream>
#include <thread>

#include <sys/stat.h>

#include "cafmq/actors/runner.hpp"
#include "cafmq/current_task.hpp"
#include "cafmq/error.hpp"

int main(int argc, char** argv) {
  if (argc != 6) {
    std::cerr << "usage: cafmq-e2e-runner-node URL NODE SECRET DIR "
                 "LEASE_MS\n";
    return 2;
  }
  std::string dir = argv[4];
  // The workers' tasks: known here (for their defaults), run there.
  auto elsewhere = [](cafmq::current_task&) -> caf::error {
    return cafmq::make_error(cafmq::errc::handler_failed,
                             "runs on worker nodes only");
  };
  auto remote = std::make_shared<cafmq::registry>();
  remote->add({"remote_record", elsewhere, {}});
  remote->add({"remote_wait_cancel", elsewhere, {}});
  cafmq::actors::runner_config cfg;
  cfg.database_url = argv[1];
  cfg.node = argv[2];
  cfg.remote_tasks = remote;
  cfg.lease = std::chrono::milliseconds{std::stoi(argv[5])};
  cfg.keep_alive_interval = cfg.lease / 3;
  cfg.publish.port = 0;
  cfg.publish.secret = argv[3];
  auto runner = cafmq::actors::runner::start(cfg);
  if (!runner) {
    std::cerr << cfg.node << ": " << cafmq::render(runner.error()) << '\n';
    return 1;
  }
  {
    std::ofstream out{dir + "/.port"};
    out << *(*runner)->node_port();
  }
  rename((dir + "/.port").c_str(), (dir + "/port").c_str());
  struct stat st;
  while (stat((dir + "/stop").c_str(), &st) != 0)
    std::this_thread::sleep_for(std::chrono::milliseconds{20});
  auto stats = (*runner)->stats();
  (*runner)->stop();
  std::cout << cfg.node << ": claimed " << stats.claimed << " in "
            << stats.claims << " claims, completed " << stats.completed
            << ", failed " << stats.failed << "\n";
  return 0;
}
