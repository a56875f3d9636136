// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// The attempts that started in this runner: the pool adds an attempt when
// its handler starts (or a joined worker takes it) and removes it when it
// ends; the listener writes the set to the runner's session when it changed
// (cafmq.record_started), so that a runner that takes over this one's tasks
// after it died gives claimed-ahead attempts that never started their
// attempt back. An attempt that starts on a joined worker names it: the
// session writes that to the task's row too (cafmq.record_workers), so
// that the attempt, if its lease is lost, names the worker it was lost
// with. Thread-safe: executor threads add what they start.

#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cafmq/uuid.hpp"

namespace cafmq::actors {

/// Attempts that started on joined workers, not written yet.
struct worker_starts {
  std::vector<uuid> ids;
  std::vector<int> attempts;
  std::vector<std::string> workers;
};

class started_attempts {
public:
  /// `worker`: the worker node or process it started on; empty: here.
  void add(const uuid& id, int attempt, const std::string& worker = {}) {
    std::lock_guard<std::mutex> guard{mtx_};
    changed_ |= ids_.insert_or_assign(id, attempt).second;
    if (worker.empty())
      return;
    on_workers_.ids.push_back(id);
    on_workers_.attempts.push_back(attempt);
    on_workers_.workers.push_back(worker);
  }

  /// The attempts that started on workers since the last call.
  worker_starts take_worker_starts() {
    std::lock_guard<std::mutex> guard{mtx_};
    return std::exchange(on_workers_, {});
  }

  void remove(const uuid& id) {
    std::lock_guard<std::mutex> guard{mtx_};
    changed_ |= ids_.erase(id) > 0;
  }

  /// The started attempts, if they changed since the last call.
  std::optional<std::vector<uuid>> take_changes() {
    std::lock_guard<std::mutex> guard{mtx_};
    if (!changed_)
      return std::nullopt;
    changed_ = false;
    std::vector<uuid> result;
    result.reserve(ids_.size());
    for (auto& kvp : ids_)
      result.push_back(kvp.first);
    return result;
  }

  /// The started attempts as (id, attempt).
  std::vector<std::pair<uuid, int>> snapshot() {
    std::lock_guard<std::mutex> guard{mtx_};
    return {ids_.begin(), ids_.end()};
  }

  /// How many attempts started and have not ended.
  std::size_t size() {
    std::lock_guard<std::mutex> guard{mtx_};
    return ids_.size();
  }

  /// Makes the next take_changes() answer (after a new session).
  void touch() {
    std::lock_guard<std::mutex> guard{mtx_};
    changed_ = true;
  }

private:
  std::mutex mtx_;
  std::unordered_map<uuid, int> ids_;
  bool changed_ = false;
  worker_starts on_workers_;
};

} // namespace cafmq::actors
