// SPDX-License-Identifier: BSD-3-Clause
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

namespace cafmq {

/// How retry delays are spread (AWS's definitions), applied to the capped
/// exponential delay d = min(backoff_cap, backoff * 2^(retry - 1)).
enum class retry_jitter {
  /// Each retry waits d.
  none,
  /// Each retry waits random(0, d): the widest spread.
  full,
  /// Each retry waits d/2 + random(0, d/2): spread, but never short.
  equal,
};

/// "none", "full" or "equal".
const char* to_string(retry_jitter x) noexcept;

/// Default options of a task definition; every spawn can override each one.
struct task_options {
  /// Channel name; runners subscribe by name (all args of it).
  std::string channel_name;
  /// Channel args: (name, args) is the unit of ordering and fairness.
  std::string channel_args;
  /// Retries after the first attempt (4 → 5 attempts).
  int retries = 4;
  /// Delay before the first retry; doubles per retry.
  std::chrono::microseconds backoff = std::chrono::seconds{1};
  /// Upper bound of the retry delay.
  std::chrono::microseconds backoff_cap = std::chrono::hours{1};
  /// Random spread of the retry delay; none by default.
  retry_jitter jitter = retry_jitter::none;
  /// Runs after every earlier ordered task of its channel has finished.
  bool ordered = false;
  /// Within its channel, a ready task of higher priority runs first; 0 (the
  /// default) is the lowest, 32767 the highest. Unordered tasks only: an
  /// ordered channel runs in spawn order. Channels still take turns: a
  /// channel of high-priority tasks does not starve another.
  int priority = 0;
  /// Per-attempt time limit; none when empty.
  std::optional<std::chrono::microseconds> timeout;
};

/// The highest task priority.
constexpr int max_priority = 32767;
/// Limits that spawn enforces before touching the database.
constexpr std::size_t max_name_bytes = 255;
/// Longest channel args, in bytes.
constexpr std::size_t max_channel_args_bytes = 4096;
/// Longest unique key, in bytes.
constexpr std::size_t max_unique_key_bytes = 1024;

/// Largest accepted payload (JSON and bytes together); 1 MiB by default.
std::size_t payload_limit() noexcept;

/// Sets the largest accepted payload for this process.
void payload_limit(std::size_t bytes) noexcept;

} // namespace cafmq
