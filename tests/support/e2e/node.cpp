// SPDX-License-Identifier: BSD-3-Clause
// `cafmq-e2e node`: a runner node for the e2e tests: publishes its control
// interface on a free port of 127.0.0.1, prints "PORT <port> PID <pid>" on
// stdout, and runs until a peer stops it (then prints "STOPPED completed
// N"). Its tasks: "echo" completes at once (its payload its result);
// "wait_cancel" works until it is cancelled; "fail" fails for good.
//
//   cafmq-e2e node URL SECRET [CERT KEY CAFILE]

#include <iostream>

#include <unistd.h>

#include "cafmq/actors/runner.hpp"
#include "cafmq/current_task.hpp"
#include "cafmq/error.hpp"

#include "common.hpp"
#include "tasks.hpp"

namespace cafmq::e2e {

int run_node(const arguments& args) {
  auto tasks = std::make_shared<registry>();
  // Its JSON payload, if any, becomes its result.
  tasks->add({"echo",
              [](current_task& task) {
                if (task.raw_json())
                  return task.set_raw_result(*task.raw_json());
                return caf::error{};
              },
              {}});
  tasks->add({"wait_cancel", wait_cancel, {}});
  task_options no_retries;
  no_retries.retries = 0;
  tasks->add(
    {"fail",
     [](current_task&) { return make_error(errc::handler_failed, "no"); },
     no_retries});
  actors::runner_config cfg;
  cfg.database_url = args[0];
  cfg.node = "e2e-node";
  cfg.tasks = tasks;
  cfg.min_concurrency = 2;
  cfg.max_concurrency = 4;
  cfg.shutdown_timeout = std::chrono::seconds{5};
  cfg.publish.port = 0;
  cfg.publish.secret = args[1];
  if (args.size() == 5) {
    cfg.publish.tls.certificate = args[2];
    cfg.publish.tls.key = args[3];
    cfg.publish.tls.cafile = args[4];
  }
  auto runner = actors::runner::start(cfg);
  if (!runner)
    return fail(cfg.node, runner.error());
  std::cout << "PORT " << *(*runner)->node_port() << " PID " << getpid()
            << std::endl;
  (*runner)->wait();
  // The counters as the remote stop left them.
  std::cout << "STOPPED completed " << (*runner)->stats().completed
            << std::endl;
  return 0;
}

} // namespace cafmq::e2e
