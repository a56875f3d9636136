// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// Outcomes of attempts that ran on executor threads, waiting for the actor
// that reports them: the thread that fills an empty box tells the actor
// once, and the actor takes everything in one message. Internal.

#include <mutex>
#include <vector>

#include "cafmq/actors/detail/protocol.hpp"

namespace cafmq::actors {

struct outcome_box {
  std::mutex mtx;
  std::vector<task_outcome> items;

  // Adds an outcome; true if the box was empty (then the actor needs telling).
  bool put(task_outcome x) {
    std::lock_guard<std::mutex> guard{mtx};
    items.push_back(std::move(x));
    return items.size() == 1;
  }

  std::vector<task_outcome> take() {
    std::vector<task_outcome> result;
    std::lock_guard<std::mutex> guard{mtx};
    result.swap(items);
    return result;
  }
};

} // namespace cafmq::actors
