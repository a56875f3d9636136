// SPDX-License-Identifier: BSD-3-Clause
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace cafmq {

/// Where a task is in its life; a final state never changes.
enum class task_state {
  /// A two-phase reservation waiting for `commit`.
  uncommitted,
  /// Waits for its parents to end (spawned with `spawn_builder::after`).
  waiting,
  /// Ready, scheduled, or waiting for a retry.
  pending,
  running,
  completed,
  failed,
  cancelled,
};

/// Returns the database's name of the state, e.g. "pending".
std::string to_string(task_state x);

/// Every state's name in life order, comma-separated: "uncommitted,
/// waiting, pending, running, completed, failed, cancelled".
std::string task_state_names();

/// Parses the database's name of a state.
std::optional<task_state> parse_task_state(const std::string& str);

/// True for completed, failed and cancelled.
constexpr bool is_final(task_state x) noexcept {
  return x == task_state::completed || x == task_state::failed
         || x == task_state::cancelled;
}

/// A snapshot of one task.
struct task_status {
  /// Times are the database's clock.
  using time_point = std::chrono::system_clock::time_point;
  /// Where the task is.
  task_state state = task_state::pending;
  /// The task's name.
  std::string name;
  /// The task's channel name.
  std::string channel_name;
  /// The task's channel args.
  std::string channel_args;
  /// The current (or last) attempt; 0 before the first.
  int attempt = 0;
  /// Attempts the task may have in all.
  int max_attempts = 0;
  /// The error of the last failed attempt, or why the task ended without
  /// running.
  std::optional<std::string> last_error;
  /// A cancel was requested; a running task ends cancelled once its handler
  /// stops.
  bool cancel_requested = false;
  /// The runner that ran the last attempt.
  std::optional<std::string> node;
  /// When the task was spawned.
  time_point created_at;
  /// Pending: earliest start; running: lease expiry.
  time_point run_at;
  /// When the current (or last) attempt started.
  std::optional<time_point> started_at;
  /// When the task reached its final state.
  std::optional<time_point> finished_at;
  /// Within its channel, a higher priority runs first; 0 is the lowest.
  int priority = 0;
  /// What the handler stored with its completion, as JSON text.
  std::optional<std::string> result;
};

/// One attempt of a task that started (task_detail::attempts).
struct attempt_record {
  /// The attempt's number (1 for the first).
  int attempt = 0;
  /// When it started.
  task_status::time_point started_at;
  /// When it ended; unset while it runs.
  std::optional<task_status::time_point> ended_at;
  /// How it ended: "failed" (retried at `retry_at`), "lost" (its lease
  /// expired), "running" (not ended), or the final state the task ended in
  /// with it ("completed", "failed", "cancelled"); the final attempt of a
  /// task retried by hand keeps the state it ended in.
  std::string outcome;
  /// Its error, where it failed, was lost or was cancelled with one.
  std::optional<std::string> error;
  /// The runner whose claim it was.
  std::optional<std::string> node;
  /// The worker node or worker process that ran it; unset: the runner did
  /// (or it is unknown: a lost attempt, one still running).
  std::optional<std::string> worker;
  /// When the next attempt could start, after a retried failure or a retry
  /// by hand.
  std::optional<task_status::time_point> retry_at;
};

} // namespace cafmq
