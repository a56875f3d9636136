// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// What the runtime's actors share about event subscribers: a count that
// makes events free while nobody subscribes (one relaxed load), the hub's
// current handle (it changes when the hub is restarted) and the
// subscriptions, which outlive a crashed hub so that its successor serves
// them on.

#include <atomic>
#include <mutex>
#include <utility>
#include <vector>

#include "cafmq/actors/detail/protocol.hpp"

namespace cafmq::actors {

/// What the runtime's actors share about event subscribers (see the top of this
/// header). Thread-safe.
class event_bus {
public:
  /// A subscriber and the filter its events must pass.
  using subscription = std::pair<event_filter, event_actor>;

  /// True while someone subscribes.
  bool active() const noexcept {
    return count_.load(std::memory_order_relaxed) > 0;
  }

  /// The hub to send events to (invalid before the first one started).
  event_hub_actor hub() const;

  /// Sets the hub's handle; each hub does when it starts.
  void hub(event_hub_actor x);

  /// A copy of the current subscriptions.
  std::vector<subscription> subscriptions() const;

  /// Replaces the subscriptions; `active()` is true while there are any.
  void subscriptions(std::vector<subscription> xs);

private:
  std::atomic<int> count_{0};
  mutable std::mutex mtx_;
  event_hub_actor hub_;
  std::vector<subscription> subscriptions_;
};

} // namespace cafmq::actors
