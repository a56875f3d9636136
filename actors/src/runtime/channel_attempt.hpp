// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// An attempt as the channel actor that owns it keeps it, from claim to
// written outcome, and how its ending is reported (events, metrics).

#include "cafmq/actors/detail/context.hpp"
#include "cafmq/actors/detail/messages.hpp"
#include "cafmq/actors/detail/runtime_metrics.hpp"
#include "cafmq/actors/messages.hpp"
#include "cafmq/claimed_task.hpp"

namespace cafmq::actors::channel_impl {

struct attempt {
  enum phase_t { queued, started, writing };
  // The claimed attempt; its payloads are dropped once it started.
  claimed_task task;
  phase_t phase = queued;
  // Started on a joined worker (through the router), not here (the pool).
  bool remote = false;
  // Why it was stopped first (cancel, timeout, lost lease...), if it was.
  cancel_reason stopped_by = cancel_reason::none;
  // The outcome while it is written: sent again to a restarted completer.
  task_outcome outcome;

  // True if the outcome being written gives it back (it never ran, or the
  // stop abandoned it): the task is pending again, its attempt number
  // unchanged.
  bool given_back() const {
    return phase == writing
           && (outcome.kind == task_outcome::released
               || outcome.kind == task_outcome::abandoned);
  }
};

/// The outcome of a started attempt whose pool (or router, `remote`)
/// crashed: it failed, retryably.
task_outcome crashed_outcome(const attempt_ref& ref, bool remote);

/// The event of an outcome that is now written, as the database took it.
task_event written_event(const attempt& x, written_as as,
                         const runtime_context& ctx);

/// Counts an outcome in the metrics once it is written (or, `recorded`,
/// when the handler's own transaction completed it); see channel_attempt.cpp.
void count_ending(runtime_metrics& metrics, const attempt& x,
                  const task_outcome& outcome);

} // namespace cafmq::actors::channel_impl
