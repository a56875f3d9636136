// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// The attempts that started in this runner: the pool adds an attempt when
// its handler starts (or a joined worker takes it) and removes it when it
// ends; the listener writes the set to the runner's session when it changed
// (cafmq.record_started), so that a runner that takes over this one's tasks
// after it died gives claimed-ahead attempts that never started their
// attempt back. Thread-safe: executor threads add what they start.

#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cafmq/uuid.hpp"

namespace cafmq::actors {

class started_attempts {
public:
  void add(const uuid& id, int attempt) {
    std::lock_guard<std::mutex> guard{mtx_};
    changed_ |= ids_.insert_or_assign(id, attempt).second;
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
};

} // namespace cafmq::actors
