#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace cafmq {

enum class task_state {
  /// A two-phase reservation waiting for `commit`.
  uncommitted,
  /// Ready, scheduled, or waiting for a retry.
  pending,
  running,
  completed,
  failed,
  cancelled,
};

std::string to_string(task_state x);

/// Parses the database's name of a state.
std::optional<task_state> parse_task_state(const std::string& str);

/// True for completed, failed and cancelled.
constexpr bool is_final(task_state x) noexcept {
  return x == task_state::completed || x == task_state::failed
         || x == task_state::cancelled;
}

/// A snapshot of one task.
struct task_status {
  using time_point = std::chrono::system_clock::time_point;
  task_state state = task_state::pending;
  std::string name;
  std::string channel_name;
  std::string channel_args;
  /// The current (or last) attempt; 0 before the first.
  int attempt = 0;
  int max_attempts = 0;
  std::optional<std::string> last_error;
  bool cancel_requested = false;
  /// The runner that ran the last attempt.
  std::optional<std::string> node;
  time_point created_at;
  /// Pending: earliest start; running: lease expiry.
  time_point run_at;
  std::optional<time_point> started_at;
  std::optional<time_point> finished_at;
};

} // namespace cafmq
