// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// cafmq-bench's part "held_snapshot": a steady offered load (spawned in
// batches every 10 ms, drained by a runner with default options) while
// another session holds a REPEATABLE READ snapshot open for the middle half
// of the run, so that vacuum can remove no row version that the load leaves
// meanwhile. Measured per window: throughput, pickup p99 (spawn call to
// handler start) and the size of the table the claim walks (tasks_live, or
// tasks before storage v2).

#include <chrono>
#include <string>
#include <vector>

namespace cafmq::bench {

struct held_snapshot_options {
  /// Tasks spawned per second.
  int rate = 2000;
  /// The whole run; the snapshot is held from a quarter to three quarters.
  std::chrono::seconds length{600};
  /// One line of the report per window.
  std::chrono::seconds window{30};
  /// Without the held snapshot: the baseline.
  bool hold = true;
  /// runner_config::vacuum_dead_rows; -1: the default.
  int vacuum_dead_rows = -1;
};

struct held_snapshot_window {
  /// Seconds since the load started, at the window's end.
  double end_s = 0;
  /// Whether the snapshot was held for the whole window.
  bool held = false;
  /// Handler starts per second in the window.
  double tasks_per_s = 0;
  /// Pickup p99 of the tasks started in the window, in ms.
  double p99_ms = 0;
  /// The claim's table with its indexes and TOAST at the window's end, MB.
  double table_mb = 0;
  /// Its dead row versions then (the statistics' estimate).
  double dead_rows = 0;
};

/// Runs the load on the migrated database at `url` and returns its windows;
/// fails (exits) if a task is not run exactly once.
std::vector<held_snapshot_window>
run_held_snapshot(const std::string& url, const held_snapshot_options& opts);

} // namespace cafmq::bench
