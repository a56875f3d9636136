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
};

/// A failed attempt to record.
struct attempt_failure {
  attempt_ref ref;
  std::string error;
  /// False: fail the task now, whatever attempts are left.
  bool retryable = true;
};

} // namespace cafmq
