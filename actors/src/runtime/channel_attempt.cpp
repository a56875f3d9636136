// SPDX-License-Identifier: BSD-3-Clause
#include "runtime/channel_attempt.hpp"

#include "cafmq/actors/detail/event_hub.hpp"

namespace cafmq::actors::channel_impl {

task_outcome crashed_outcome(const attempt_ref& ref, bool remote) {
  task_outcome result;
  result.ref = ref;
  result.kind = task_outcome::failed;
  result.error = remote ? "the worker router crashed while the attempt ran"
                        : "the worker pool crashed while the attempt ran";
  return result;
}

// The event of an outcome that is now written, as the database took it:
// what the task's row says now, not what the handler returned.
task_event written_event(const attempt& x, written_as as,
                         const runtime_context& ctx) {
  auto kind = task_event::completed;
  switch (as) {
    case written_as::not_current:
      kind = task_event::lost;
      break;
    case written_as::completed:
      break;
    case written_as::retrying:
    case written_as::failed:
      kind = task_event::failed;
      break;
    case written_as::cancelled:
      kind = task_event::cancelled;
      break;
    case written_as::released:
      kind = task_event::released;
      break;
  }
  auto result = make_event(kind, x.task, ctx);
  if (kind == task_event::lost)
    result.error = "the attempt was no longer current (its lease was lost): "
                   "what its handler returned was not written";
  else
    result.error = x.outcome.error;
  result.retryable = as == written_as::retrying;
  result.worker = x.outcome.worker;
  return result;
}

// Counts an outcome in the metrics once it is written (or, `recorded`,
// when the handler's own transaction completed it). An attempt whose lease
// was lost counts in cafmq_leases_lost_total only: its writes are fenced.
// One whose handler's transaction completed it counts as completed even so:
// that transaction committed, fenced, so its attempt was current then (a
// renewal that raced the commit reported it lost; under load the count of
// completions fell short of the table's in tests/scripts/prometheus.sh).
void count_ending(runtime_metrics& metrics, const attempt& x,
                  const task_outcome& outcome) {
  using ending = runtime_metrics::ending;
  if (x.stopped_by == cancel_reason::lost
      && outcome.kind != task_outcome::recorded)
    return;
  auto how = ending::completed;
  if (outcome.kind == task_outcome::released
      || outcome.kind == task_outcome::abandoned)
    how = ending::released;
  else if (outcome.kind == task_outcome::failed)
    how = x.stopped_by == cancel_reason::cancelled ? ending::cancelled
          : outcome.retryable && x.task.attempt < x.task.max_attempts
            ? ending::retried
            : ending::failed;
  metrics.ended(metrics.of(x.task.name), how);
}

} // namespace cafmq::actors::channel_impl
