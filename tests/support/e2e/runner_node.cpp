// SPDX-License-Identifier: BSD-3-Clause
// `cafmq-e2e runner-node`: a runner node for the remote worker e2e tests:
// it owns the database, runs no handler (it declares the workers' tasks as
// remote_tasks) and publishes its control interface on a free port of
// 127.0.0.1 with SECRET; writes its pid to DIR/node.pid and the port to
// DIR/port, and runs until
// DIR/stop exists, then stops gracefully and prints its counters.
//
//   cafmq-e2e runner-node URL NODE SECRET DIR LEASE_MS

#include <iostream>

#include <unistd.h>

#include "cafmq/actors/runner.hpp"
#include "cafmq/current_task.hpp"
#include "cafmq/error.hpp"

#include "common.hpp"

namespace cafmq::e2e {

int run_runner_node(const arguments& args) {
  auto& dir = args[3];
  // The workers' tasks: declared here by name and defaults, run there.
  auto remote = std::make_shared<registry>();
  remote->declare("remote_record");
  remote->declare("remote_wait_cancel");
  remote->declare("remote_complete_tx");
  actors::runner_config cfg;
  cfg.database_url = args[0];
  cfg.node = args[1];
  cfg.remote_tasks = remote;
  cfg.lease = std::chrono::milliseconds{std::stoi(args[4])};
  cfg.keep_alive_interval = cfg.lease / 3;
  cfg.request_timeout
    = std::min<std::chrono::milliseconds>(cfg.request_timeout, cfg.lease / 2);
  cfg.publish.port = 0;
  cfg.publish.secret = args[2];
  auto runner = actors::runner::start(cfg);
  if (!runner)
    return fail(cfg.node, runner.error());
  publish(dir + "/node.pid", std::to_string(getpid()));
  publish(dir + "/port", std::to_string(*(*runner)->node_port()));
  wait_for_file(dir + "/stop");
  auto stats = (*runner)->stats();
  (*runner)->stop();
  std::cout << cfg.node << ": claimed " << stats.claimed << " in "
            << stats.claims << " claims, completed " << stats.completed
            << ", failed " << stats.failed << "\n";
  return 0;
}

} // namespace cafmq::e2e
