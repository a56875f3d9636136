// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// One runtime's own metrics: counters and histograms per task name that
// the actors update as attempts pass them (the dispatcher counts claims and
// pickup latency, the pool and the router time handlers, channel actors
// count outcomes once written), the runtime's own counters (claim
// statements, leases lost, cancels found at renewal, restarts), the
// connections gauge, and gauges sampled from the runtime when scraped
// (held, running, channel actors). Every runtime has one
// (runtime_context::metrics), served or not: runner_stats reads its totals
// from these same counters (`totals`), so the two never disagree.
// Thread-safe; an update is an atomic add (a histogram's takes its own
// uncontended mutex). No CAF and no prometheus-cpp headers here.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace prometheus {
class Collectable;
} // namespace prometheus

namespace cafmq::actors {

/// Gauges read from the runtime when scraped.
struct runtime_sample {
  /// Attempts claimed and not yet out of their handlers.
  std::int64_t held = 0;
  /// Attempts whose handlers started and have not ended.
  std::int64_t running = 0;
  /// Channel actors alive.
  std::int64_t channels = 0;
  /// Handler slots: at most this many handlers run at once.
  std::int64_t slots = 0;
};

/// The counters' sums over every task name, as runner_stats reports them.
struct runtime_totals {
  std::int64_t claimed = 0;
  std::int64_t completed = 0;
  /// Failed, retried and cancelled.
  std::int64_t failed = 0;
  std::int64_t released = 0;
  std::int64_t claims = 0;
  std::int64_t lost = 0;
  std::int64_t cancels_at_renewal = 0;
  std::int64_t restarts = 0;
};

/// One runtime's metrics (see the top of this header).
class runtime_metrics {
public:
  /// The instruments of one task name.
  struct task_instruments;

  /// How an attempt ended, once written.
  enum class ending { completed, failed, retried, cancelled, released };

  /// Creates the instruments of `names` up front (their series exist from
  /// the first scrape, and the hot path finds them without a lock).
  explicit runtime_metrics(const std::vector<std::string>& names);

  ~runtime_metrics();

  runtime_metrics(const runtime_metrics&) = delete;
  runtime_metrics& operator=(const runtime_metrics&) = delete;

  /// The instruments of task `name` (made on first use for a name not
  /// given at construction).
  task_instruments& of(const std::string& name);

  /// An attempt was claimed.
  void claimed(task_instruments& task);

  /// An attempt was claimed `waited` after it became ready.
  void picked_up(task_instruments& task, std::chrono::microseconds waited);

  /// An attempt's handler returned after `duration` (observed once an
  /// endpoint serves the metrics: see `collectable`).
  void ran(task_instruments& task, std::chrono::steady_clock::duration d);

  /// An attempt's outcome is written.
  void ended(task_instruments& task, ending how);

  /// A claim statement returned (empty or not).
  void claim_returned();

  /// Lease renewals found `n` attempts no longer this runner's.
  void leases_lost(std::int64_t n);

  /// Lease renewals found `n` attempts whose tasks were cancelled.
  void cancels_at_renewal(std::int64_t n);

  /// The supervisor restarted an actor.
  void restarted();

  /// The counters, summed over every task name.
  runtime_totals totals() const;

  /// A database connection opened or closed (the connections gauge).
  void connection_opened();
  void connection_closed();

  /// What the endpoint serves: every instrument, plus the gauges `sample`
  /// reads when scraped (left out when it returns nothing).
  std::shared_ptr<prometheus::Collectable>
  collectable(std::function<std::optional<runtime_sample>()> sample);

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// Counts one open connection in the connections gauge while it (or a
/// copy) lives; an empty token.
using connection_token = std::shared_ptr<void>;

/// Counts a connection in `metrics`, if metrics are on.
inline connection_token
count_connection(const std::shared_ptr<runtime_metrics>& metrics) {
  if (!metrics)
    return nullptr;
  metrics->connection_opened();
  return {nullptr, [metrics](void*) {
            metrics->connection_closed();
          }};
}

} // namespace cafmq::actors
