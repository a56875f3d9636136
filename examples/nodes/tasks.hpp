// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// The tasks of the three-process example, shared by the runner node (which
// knows their definitions: it spawns them by name and claims them) and the
// worker node (which runs their handlers). The runner needs no database
// access on the worker and the worker none at all.

#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "cafmq/current_task.hpp"
#include "cafmq/error.hpp"
#include "cafmq/registry.hpp"

namespace nodes_example {

/// Greets the JSON string in its payload.
inline caf::error greet(cafmq::current_task& task) {
  auto who = task.json<std::string>();
  if (!who)
    return who.error();
  std::cout << "worker: Hello, " << *who << "!" << std::endl;
  return caf::none;
}

/// Works in steps until it is cancelled (or 60 s pass).
inline caf::error long_job(cafmq::current_task& task) {
  std::cout << "worker: long_job started" << std::endl;
  for (int step = 0; step < 60'000; ++step) {
    if (task.cancelled()) {
      std::cout << "worker: long_job saw its "
                << to_string(task.cancelled_because()) << " after " << step
                << " ms" << std::endl;
      return cafmq::make_error(cafmq::errc::handler_failed,
                               "stopped after " + std::to_string(step) + " ms");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{1});
  }
  return caf::none;
}

inline std::shared_ptr<const cafmq::registry> tasks() {
  cafmq::task_options greetings;
  greetings.channel_name = "greetings";
  cafmq::task_options once;
  once.channel_name = "jobs";
  once.retries = 0;
  auto result = std::make_shared<cafmq::registry>();
  result->add({"greet", greet, greetings});
  result->add({"long_job", long_job, once});
  return result;
}

/// The shared secret of the example's nodes.
inline std::string secret() {
  auto x = std::getenv("CAFMQ_NODE_SECRET");
  return x != nullptr ? x : "example-secret";
}

} // namespace nodes_example
