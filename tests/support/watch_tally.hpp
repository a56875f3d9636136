// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// Many watches at once, each by a watcher actor of its own, counted in one
// tally: how many got their first state, and how each ended (e2e watches
// and the `cafmq-e2e watches` helper).

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include <caf/all.hpp>

#include "cafmq/actors/protocol.hpp"
#include "cafmq/task_status.hpp"

namespace cafmq::test {

struct watch_tally {
  std::atomic<int> first{0};
  std::atomic<int> completed{0};
  std::atomic<int> other{0};
  std::atomic<int> errors{0};
  std::mutex mtx;
  std::vector<caf::error> errs;

  int ended() const {
    return completed + other + errors;
  }
};

/// A watcher that counts its watch in `t` and quits when it ends.
inline actors::watcher_actor::behavior_type
count_watch_end(actors::watcher_actor::pointer self,
                std::shared_ptr<watch_tally> t) {
  auto seen = std::make_shared<bool>(false);
  return {
    [=](actors::status_atom, const task_status& x) {
      if (!*seen) {
        *seen = true;
        ++t->first;
      }
      if (!is_final(x.state))
        return;
      ++(x.state == task_state::completed ? t->completed : t->other);
      self->quit();
    },
    [=](actors::watch_atom, const caf::error& err) {
      {
        std::lock_guard<std::mutex> guard{t->mtx};
        t->errs.push_back(err);
      }
      ++t->errors;
      self->quit();
    },
  };
}

} // namespace cafmq::test
