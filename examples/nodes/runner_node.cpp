// SPDX-License-Identifier: BSD-3-Clause
// The runner node of the three-process example (examples/nodes/run.sh
// starts all three): it owns the database and runs no handler itself. It
// knows the example's task definitions (so it spawns them by name and
// claims them while a worker node offers them) and publishes its control
// interface on 127.0.0.1 with the shared secret. It prints the port and runs
// until a client stops it.
//
//   cafmq-nodes-runner [PORT]   (0 or none: any free port)

#include <iostream>

#include "cafmq/actors/runner.hpp"
#include "cafmq/error.hpp"
#include "tasks.hpp"

int main(int argc, char** argv) {
  auto url = std::getenv("CAFMQ_DATABASE_URL");
  if (url == nullptr) {
    std::cerr
      << "runner: set CAFMQ_DATABASE_URL or use examples/nodes/run.sh\n";
    return 2;
  }
  cafmq::actors::runner_config cfg;
  cfg.database_url = url;
  cfg.node = "example-runner";
  cfg.remote_tasks = nodes_example::tasks();
  cfg.shutdown_timeout = std::chrono::seconds{5};
  cfg.publish.port
    = static_cast<std::uint16_t>(argc > 1 ? std::stoi(argv[1]) : 0);
  cfg.publish.secret = nodes_example::secret();
  auto runner = cafmq::actors::runner::start(cfg);
  if (!runner) {
    std::cerr << "runner: " << cafmq::render(runner.error()) << std::endl;
    return 1;
  }
  std::cout << "runner: published on 127.0.0.1 port " << *(*runner)->node_port()
            << std::endl;
  (*runner)->wait();
  std::cout << "runner: stopped" << std::endl;
  return 0;
}
