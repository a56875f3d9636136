// SPDX-License-Identifier: BSD-3-Clause
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <utility>

#include "cafmq/uuid.hpp"

namespace cafmq {

/// One attempt of a task, as a claim returns it.
struct claimed_task {
  /// The task's id.
  uuid id;
  /// The task's name: which handler runs it.
  std::string name;
  /// The task's channel name.
  std::string channel_name;
  /// The task's channel args.
  std::string channel_args;
  /// 1 for the first attempt.
  int attempt = 0;
  /// Attempts the task may have in all: retries + 1, plus what checkpoints
  /// added.
  int max_attempts = 0;
  /// Ordered: no other ordered task of its channel runs at the same time.
  bool ordered = false;
  /// The per-attempt time limit; none when empty.
  std::optional<std::chrono::microseconds> timeout;
  /// Time left until the task's deadline when it was claimed (database clock).
  std::optional<std::chrono::microseconds> deadline_in;
  /// The JSON payload as text, if the task has one; a checkpoint's replaces the
  /// spawn's.
  std::optional<std::string> payload_json;
  /// The binary payload, if the task has one; a checkpoint's replaces the
  /// spawn's.
  std::optional<std::string> payload_bytes;
  /// For a task spawned after parents (`spawn_builder::after`), how each
  /// parent ended, as a JSON array of {id, name, state, result, error}
  /// (read it with `current_task::parent_results`); none for a task without
  /// parents.
  std::optional<std::string> parents_json;
  /// The workflow the task belongs to (`spawn_builder::workflow`), if any.
  std::optional<uuid> workflow_id;
};

/// Names one attempt of a task: the fencing token of every write.
struct attempt_ref {
  /// The task.
  uuid id;
  /// The attempt's number, 1 for the first.
  int attempt = 0;

  /// Same task and same attempt.
  friend bool operator==(const attempt_ref& x, const attempt_ref& y) noexcept {
    return x.id == y.id && x.attempt == y.attempt;
  }
};

/// A failed attempt to record.
struct attempt_failure {
  /// An empty failure (for deserialization).
  attempt_failure() = default;

  /// The failure of attempt `ref` with `error`; `retryable` and `worker` as
  /// the members below.
  attempt_failure(attempt_ref ref, std::string error, bool retryable = true,
                  std::string worker = {})
    : ref(ref), error(std::move(error)), retryable(retryable),
      worker(std::move(worker)) {
    // nop
  }

  /// The attempt that failed.
  attempt_ref ref;
  /// What went wrong; stored as the task's last error.
  std::string error;
  /// False: fail the task now, whatever attempts are left.
  bool retryable = true;
  /// The worker node or worker process that ran the attempt; "": the
  /// runner that claimed it.
  std::string worker;
};

} // namespace cafmq

template <>
/// Hashes attempt references, e.g. for `std::unordered_set`.
struct std::hash<cafmq::attempt_ref> {
  /// Combines the hash of the id with the attempt number.
  std::size_t operator()(const cafmq::attempt_ref& x) const noexcept {
    return std::hash<cafmq::uuid>{}(x.id) * 31
           + static_cast<std::size_t>(x.attempt);
  }
};
