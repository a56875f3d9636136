// SPDX-License-Identifier: BSD-3-Clause
#pragma once

#include <chrono>
#include <string>

#include <caf/error.hpp>

#include "cafmq/checkpoint.hpp"
#include "cafmq/claimed_task.hpp"

namespace cafmq {

/// How a running task writes to the queue outside the caller's transactions:
/// directly on a connection (`queue_connection`) or through the actor
/// runtime, which batches the writes. Every write is fenced by the attempt.
class task_backend {
public:
  virtual ~task_backend();

  /// Completes the attempt, storing `result` (JSON text; "" for none);
  /// `errc::stale_attempt` if it is not current.
  virtual caf::error complete(const attempt_ref& x, const std::string& result)
    = 0;
  /// Completes the attempt without a result.
  caf::error complete(const attempt_ref& x) {
    return complete(x, std::string{});
  }

  /// Saves `cp` for the next attempt; `errc::stale_attempt` if the attempt is
  /// not current.
  virtual caf::error checkpoint(const attempt_ref& x,
                                const cafmq::checkpoint& cp)
    = 0;

  /// Extends the attempt's lease to at least now + `lease`;
  /// `errc::stale_attempt` if the attempt is not current.
  virtual caf::error keep_alive(const attempt_ref& x,
                                std::chrono::microseconds lease)
    = 0;

  /// Called after the attempt completed inside a caller's transaction.
  virtual void completed_in_transaction(const attempt_ref& x);

  /// The worker node or worker process that runs the attempt, recorded with
  /// a completion in the caller's transaction; "" (the default): the runner
  /// that claimed it.
  virtual std::string worker() const;

  /// Whether the attempt may be completed or checkpointed inside a caller's
  /// transaction; an error says why not (a worker node has no database).
  virtual caf::error may_write_in_transaction(const attempt_ref& x);
};

/// The error of a write whose attempt is no longer current.
caf::error stale_attempt_error(const attempt_ref& x);

} // namespace cafmq
