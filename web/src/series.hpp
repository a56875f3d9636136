// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// The dashboard's charts: the queue sampled every chart interval by one
// query (cafmq::sample_queue), each sample turned into a point, and the last
// points kept in a ring that /api/series serves. No HTTP server here, so the
// unit tests reach all of it.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cafmq/admin.hpp"
#include "cafmq/web/dashboard.hpp"

namespace cafmq::web {

/// One point of the charts: the queue at one sample, and what happened
/// since the previous one.
struct series_point {
  /// The database's clock at the sample.
  task_status::time_point at;
  /// Seconds since the previous point; 0 for the first, which has no
  /// counts of its own (nothing to count from).
  double seconds = 0;
  /// Tasks spawned since the previous point: the change in live tasks plus
  /// those that finished (never negative).
  std::int64_t spawned = 0;
  /// Tasks that completed since the previous point.
  std::int64_t completed = 0;
  /// Tasks that failed for good since the previous point.
  std::int64_t failed = 0;
  /// Tasks cancelled since the previous point.
  std::int64_t cancelled = 0;
  /// Live tasks (uncommitted, pending, running) at the sample.
  std::int64_t live = 0;
  /// Ready tasks (pending, run_at passed) of every channel.
  std::int64_t ready = 0;
  /// The longest a ready task has waited, over every channel.
  std::optional<std::chrono::microseconds> oldest_pending;

  /// One channel's backlog.
  struct channel {
    std::string name;
    std::int64_t ready = 0;
    std::optional<std::chrono::microseconds> oldest_pending;
  };
  /// The channels with the most ready tasks (then the oldest), busiest
  /// first; the rest count in `ready` only.
  std::vector<channel> channels;
  /// The serving runner's handler slots in use, where a runner serves the
  /// dashboard.
  std::optional<handler_occupancy> handlers;
};

/// {"at", "seconds", "spawned", "completed", "failed", "cancelled", "live",
/// "ready", "oldest_pending_ms", "channels": [{"channel", "ready",
/// "oldest_pending_ms"}], "handlers": {"running", "slots"} or null}.
nlohmann::json to_json(const series_point& x);

/// The last points, oldest first. One thread adds (the sampler), any
/// reads.
///
/// Each sample counts the tasks that finished in the windows between the
/// points of the last `recount` again: an ending counts by the moment its
/// transaction started, so one that was in flight at a sample shows in the
/// window it belongs to at the next. Spawns are the change in live tasks
/// plus those that finished, so such an ending can move one spawn between
/// two neighbouring points.
class series_ring {
public:
  /// Keeps `capacity` points, recounts those of the last `recount`, and
  /// keeps the `top` busiest channels of each.
  explicit series_ring(std::size_t capacity,
                       std::chrono::microseconds recount
                       = std::chrono::minutes{1},
                       std::size_t top = 20);

  /// What the next sample must count from: the times of the points of the
  /// last `recount` (before the newest) and of the newest, oldest first;
  /// none before the first point.
  std::vector<task_status::time_point> bounds() const;

  /// Adds the point of `sample` (taken with `bounds`): the points whose
  /// windows it counted get those counts, and the new point the last.
  void add(const std::vector<task_status::time_point>& bounds,
           const queue_sample& sample,
           std::optional<handler_occupancy> handlers);

  /// The points, oldest first.
  std::vector<series_point> points() const;

private:
  std::size_t capacity_;
  std::chrono::microseconds recount_;
  std::size_t top_;
  mutable std::mutex mtx_;
  std::deque<series_point> points_;
};

} // namespace cafmq::web
