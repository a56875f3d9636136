#pragma once

// The attempts that started in this runner: the pool adds an attempt when
// its handler starts (or a joined worker takes it) and removes it when it
// ends; the listener writes the set to the runner's session when it changed
// (cafmq.record_started), so that a runner that takes over this one's tasks
// after it died gives claimed-ahead attempts that never started their
// attempt back. Thread-safe: executor threads add what they start.

#include <mutex>
#include <optional>
#include <unordered_set>
#include <vector>

#include "cafmq/uuid.hpp"

namespace cafmq::actors {

class started_attempts {
public:
  void add(const uuid& id) {
    std::lock_guard<std::mutex> guard{mtx_};
    changed_ |= ids_.insert(id).second;
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
    return std::vector<uuid>(ids_.begin(), ids_.end());
  }

  /// Makes the next take_changes() answer (after a new session).
  void touch() {
    std::lock_guard<std::mutex> guard{mtx_};
    changed_ = true;
  }

private:
  std::mutex mtx_;
  std::unordered_set<uuid> ids_;
  bool changed_ = false;
};

} // namespace cafmq::actors
