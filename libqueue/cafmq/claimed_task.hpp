#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "cafmq/uuid.hpp"

namespace cafmq {

/// One attempt of a task, as a claim returns it.
struct claimed_task {
  uuid id;
  std::string name;
  std::string channel_name;
  std::string channel_args;
  /// 1 for the first attempt.
  int attempt = 0;
  int max_attempts = 0;
  /// Ordered: no other ordered task of its channel runs at the same time.
  bool ordered = false;
  std::optional<std::chrono::microseconds> timeout;
  /// Time left until the task's deadline when it was claimed (database clock).
  std::optional<std::chrono::microseconds> deadline_in;
  std::optional<std::string> payload_json;
  std::optional<std::string> payload_bytes;
};

/// Names one attempt of a task: the fencing token of every write.
struct attempt_ref {
  uuid id;
  int attempt = 0;

  friend bool operator==(const attempt_ref& x, const attempt_ref& y) noexcept {
    return x.id == y.id && x.attempt == y.attempt;
  }
};

/// A failed attempt to record.
struct attempt_failure {
  attempt_ref ref;
  std::string error;
  /// False: fail the task now, whatever attempts are left.
  bool retryable = true;
};

} // namespace cafmq

template <>
struct std::hash<cafmq::attempt_ref> {
  std::size_t operator()(const cafmq::attempt_ref& x) const noexcept {
    return std::hash<cafmq::uuid>{}(x.id) * 31
           + static_cast<std::size_t>(x.attempt);
  }
};
