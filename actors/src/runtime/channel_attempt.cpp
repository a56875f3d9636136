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

// The event of an outcome that is now written.
task_event written_event(const attempt& x, const runtime_context& ctx) {
  auto kind = task_event::completed;
  if (x.outcome.kind == task_outcome::failed)
    kind = task_event::failed;
  else if (x.outcome.kind == task_outcome::released
           || x.outcome.kind == task_outcome::abandoned)
    kind = task_event::released;
  auto result = make_event(kind, x.task, ctx);
  result.error = x.outcome.error;
  result.retryable = kind == task_event::failed && x.outcome.retryable
                     && x.task.attempt < x.task.max_attempts;
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
