// SPDX-License-Identifier: BSD-3-Clause
// A runner node for the e2e tests: publishes its control interface on a
// free port of 127.0.0.1, prints "PORT <port> PID <pid>" on stdout, and
// runs until a peer stops it (then prints "STOPPED completed N"). Its tasks:
// "echo" completes at once (its payload its result); "wait_cancel" works
// until it is cancelled; "fail" fails for good.
//
//   cafmq-e2e-node URL SECRET [CERT KEY CAFILE]

#include <iostream>
#include <thread>

#include <unistd.h>

#include "cafmq/actors/runner.hpp"
#include "cafmq/current_task.hpp"
#include "cafmq/error.hpp"

int main(int argc, char** argv) {
  if (argc != 3 && argc != 6) {
    std::cerr << "usage: cafmq-e2e-node URL SECRET [CERT KEY CAFILE]\n";
    return 2;
  }
  auto tasks = std::make_shared<cafmq::registry>();
  // Its JSON payload, if any, becomes its result.
  tasks->add({"echo",
              [](cafmq::current_task& task) {
                if (task.raw_json())
                  return task.set_raw_result(*task.raw_json());
                return caf::error{};
              },
              {}});
  tasks->add({"wait_cancel",
              [](cafmq::current_task& task) -> caf::error {
                while (!task.cancelled())
                  std::this_thread::sleep_for(std::chrono::milliseconds{1});
                return cafmq::make_error(cafmq::errc::handler_failed,
                                         "cancelled");
              },
              {}});
  cafmq::task_options no_retries;
  no_retries.retries = 0;
  tasks->add({"fail",
              [](cafmq::current_task&) {
                return cafmq::make_error(cafmq::errc::handler_failed, "no");
              },
              no_retries});
  cafmq::actors::runner_config cfg;
  cfg.database_url = argv[1];
  cfg.node = "e2e-node";
  cfg.tasks = tasks;
  cfg.min_concurrency = 2;
  cfg.max_concurrency = 4;
  cfg.shutdown_timeout = std::chrono::seconds{5};
  cfg.publish.port = 0;
  cfg.publish.secret = argv[2];
  if (argc == 6) {
    cfg.publish.tls.certificate = argv[3];
    cfg.publish.tls.key = argv[4];
    cfg.publish.tls.cafile = argv[5];
  }
  auto runner = cafmq::actors::runner::start(cfg);
  if (!runner) {
    std::cerr << "e2e-node: " << cafmq::render(runner.error()) << std::endl;
    return 1;
  }
  std::cout << "PORT " << *(*runner)->node_port() << " PID " << getpid()
            << std::endl;
  (*runner)->wait();
  // The counters as the remote stop left them.
  std::cout << "STOPPED completed " << (*runner)->stats().completed
            << std::endl;
  return 0;
}
