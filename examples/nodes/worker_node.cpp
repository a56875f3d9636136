// SPDX-License-Identifier: BSD-3-Clause
// The worker node of the three-process example: no database access. It
// joins the runner node and runs the handlers of tasks.hpp, at most four at
// once, until the runner lets it go.
//
//   cafmq-nodes-worker PORT

#include <iostream>

#include "cafmq/actors/worker.hpp"
#include "cafmq/error.hpp"
#include "tasks.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: cafmq-nodes-worker PORT\n";
    return 2;
  }
  cafmq::actors::worker_config cfg;
  cfg.node = "example-worker";
  cfg.tasks = nodes_example::tasks();
  cfg.capacity = 4;
  cafmq::actors::node_endpoint runner;
  runner.port = static_cast<std::uint16_t>(std::stoi(argv[1]));
  runner.secret = nodes_example::secret();
  auto worker = cafmq::actors::worker_node::start(cfg, runner);
  if (!worker) {
    std::cerr << "worker: " << cafmq::render(worker.error()) << std::endl;
    return 1;
  }
  std::cout << "worker: joined the runner on port " << runner.port << std::endl;
  if (auto err = (*worker)->wait()) {
    std::cerr << "worker: " << cafmq::render(err) << std::endl;
    return 1;
  }
  std::cout << "worker: the runner let me go" << std::endl;
  return 0;
}
