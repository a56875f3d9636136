// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// The message types of the runtime's public protocol (see protocol.hpp),
// each with an `inspect` overload so that it can cross to another node. The
// queue's own types (claimed_task, attempt_ref, checkpoint...) get theirs
// here too: libqueue does not depend on the actor runtime. The runtime's
// internal message types are in cafmq/actors/detail/messages.hpp.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/meta/load_callback.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/optional.hpp>
#include <caf/timespan.hpp>
#include <caf/timestamp.hpp>

#include "cafmq/cancellation.hpp"
#include "cafmq/checkpoint.hpp"
#include "cafmq/claimed_task.hpp"
#include "cafmq/task_status.hpp"

namespace cafmq::actors {

// -- message types
// --------------------------------------------------------------

/// How an attempt ended, as its executor saw it.
struct task_outcome {
  /// What to write for the attempt.
  enum kind_t : std::uint8_t {
    /// The handler succeeded: record completion.
    completed,
    /// Nothing to write: completed in the handler's own transaction, or the
    /// attempt is no longer ours (lost lease).
    recorded,
    /// The handler failed: record the failure.
    failed,
    /// Never started, or interrupted by this runner's stop: give it back
    /// (pending again at once, the attempt not counted).
    released,
    /// The handler still runs, past the stop's bound, and is no longer
    /// waited for: hand the attempt back (its lease ends now, the attempt
    /// counts, and a late outcome of it is fenced).
    abandoned,
  };
  /// The attempt.
  attempt_ref ref;
  /// How it ended.
  kind_t kind = completed;
  /// For `failed`: what went wrong.
  std::string error;
  /// For `failed`: false fails the task at once, whatever attempts are left.
  bool retryable = true;
  /// For `completed`: the result the handler stored (JSON text), "" for
  /// none.
  std::string result;
  /// The joined worker (worker node or worker process) that ran it, as its
  /// port on the runner names it; empty when it ran in this runtime.
  std::string worker;
};

/// Counters of one runtime.
struct runner_stats {
  /// Attempts held: claimed and not yet out of their handler.
  std::int32_t running = 0;
  /// Channel actors alive.
  std::int32_t channels = 0;
  // The counters below are the ones /metrics exports (the sums over task
  // names of cafmq_tasks_*_total, and the runner's own): an outcome counts
  // once it is written, and an attempt whose lease was lost counts only in
  // `lost`.
  /// Attempts claimed since the runtime started.
  std::int64_t claimed = 0;
  /// Attempts whose handlers succeeded.
  std::int64_t completed = 0;
  /// Attempts whose handlers failed (retried, cancelled, or the task's end).
  std::int64_t failed = 0;
  /// Claimed attempts given back unstarted (or interrupted by a stop).
  std::int64_t released = 0;
  /// Claims that returned (one statement each, empty or not).
  std::int64_t claims = 0;
  /// Cancels that reached attempts through a lease renewal (their
  /// notification was missed).
  std::int64_t cancels_at_renewal = 0;
  /// Attempts this runner lost (lease renewal no longer owned them).
  std::int64_t lost = 0;
  /// Children restarted by the supervisor.
  std::int64_t restarts = 0;
};

/// A spawn sent to a runtime by name (from another node, or the CLI): the
/// task definition's defaults, overridden by every field that is set. The
/// same checks as spawn_builder apply; the JSON is checked when spawning.
struct spawn_request {
  /// The task's name; the runtime must know its definition.
  std::string name;
  /// The task's id; a new time-ordered one when unset.
  caf::optional<uuid> id;
  /// Channel name.
  caf::optional<std::string> channel_name;
  /// Channel args.
  caf::optional<std::string> channel_args;
  /// Runs no earlier than this long after spawn (database clock).
  caf::optional<caf::timespan> delay;
  /// Runs no earlier than this moment; not together with `delay`.
  caf::optional<caf::timestamp> run_at;
  /// Retries after the first attempt.
  caf::optional<std::int32_t> retries;
  /// Delay before the first retry; doubles per retry.
  caf::optional<caf::timespan> backoff;
  /// Upper bound of the retry delay.
  caf::optional<caf::timespan> backoff_cap;
  /// Runs after every earlier ordered task of its channel has finished.
  caf::optional<bool> ordered;
  /// Within its channel, a higher priority runs first (0 to 32767).
  caf::optional<std::int32_t> priority;
  /// Two-phase: reserved until committed within this long.
  caf::optional<caf::timespan> commit_interval;
  /// Per-attempt time limit.
  caf::optional<caf::timespan> timeout;
  /// No attempt starts, and none is retried, after this moment.
  caf::optional<caf::timestamp> deadline;
  /// At most one live (uncommitted, pending or running) task per key.
  caf::optional<std::string> unique_key;
  /// JSON payload as text, and/or a binary payload.
  caf::optional<std::string> json;
  /// Binary payload.
  caf::optional<std::string> bytes;
  /// Runs after these tasks have ended (`spawn_builder::after`): tasks
  /// spawned already, or earlier requests of the same spawn of many.
  std::vector<uuid> parents;
  /// When a parent fails or is cancelled: "cancel" (the default) or "run".
  caf::optional<std::string> on_parent_failure;
  /// The workflow it belongs to (`spawn_builder::workflow`).
  caf::optional<uuid> workflow;
};

/// What a spawn did: the new task, or the live task holding the unique key.
struct spawn_reply {
  /// The new task, or the live task holding the unique key.
  uuid id;
  /// False when a live task already held the unique key: nothing was added.
  bool created = false;
};

/// One step in a task's life, as the runtime that owns it sees it. A node
/// reports the attempts it runs (and the spawns and cancels made through
/// it). An attempt's ending is reported once it is written, as the
/// database took it: the event says what the task's row says.
struct task_event {
  /// Which step.
  enum kind_t : std::uint8_t {
    /// Spawned through this runtime.
    spawned,
    /// A handler began an attempt (here or on a joined worker).
    started,
    /// The attempt completed: its handler returned success, or its
    /// complete() or complete(tx) committed.
    completed,
    /// The attempt failed; `retryable`: a retry is scheduled (the task is
    /// pending again), else the task ended failed. Timeouts and deadlines
    /// are failures.
    failed,
    /// Given back without counting: claimed ahead and never started, or
    /// interrupted by this runtime's stop.
    released,
    /// The task ended cancelled: its running attempt stopped after a
    /// cancel, or (attempt: the attempts it had) a pending task was
    /// cancelled through this runtime.
    cancelled,
    /// The attempt was no longer current when its outcome was written (its
    /// lease was lost: another runner may run the task again), so nothing
    /// was written.
    lost,
  };
  /// Which step.
  kind_t kind = spawned;
  /// The task.
  uuid id;
  /// The attempt's number, 1 for the first.
  std::int32_t attempt = 0;
  /// The task's name.
  std::string name;
  /// The task's channel name.
  std::string channel_name;
  /// The task's channel args.
  std::string channel_args;
  /// For `failed`, `cancelled` and `lost`: what happened.
  std::string error;
  /// For `failed`: a retry is scheduled.
  bool retryable = false;
  /// When the runtime saw it (its clock).
  caf::timestamp at;
  /// The runner's node name.
  std::string node;
  /// For an ending: the joined worker (worker node or worker process) that
  /// ran the attempt; empty when it ran in this runtime. (A remote
  /// attempt's `started` comes before a worker is chosen, so it names
  /// none.)
  std::string worker;
  /// The task's workflow (`spawn_builder::workflow`), if it has one.
  caf::optional<uuid> workflow;
};

/// Which events a subscriber gets.
struct event_filter {
  /// What the filter compares: nothing (every event passes), the channel
  /// name, the task name or the workflow.
  enum by_t : std::uint8_t {
    everything,
    channel_name,
    task_name,
    workflow,
  };
  /// What the filter compares.
  by_t by = everything;
  /// The channel or task name an event must have, or the workflow's id (as
  /// `to_string` writes it); unused for `everything`.
  std::string value;

  /// True when `x` passes the filter.
  bool matches(const task_event& x) const {
    switch (by) {
      case channel_name:
        return x.channel_name == value;
      case task_name:
        return x.name == value;
      case workflow:
        return x.workflow && to_string(*x.workflow) == value;
      default:
        return true;
    }
  }
};

/// What a worker node offers when it joins a runner node.
struct worker_offer {
  /// The worker's name (host:pid by default), for logs and task rows.
  std::string node;
  /// The task names it runs.
  std::vector<std::string> names;
  /// At most this many attempts at once.
  std::int32_t capacity = 0;
  /// Its process id, when the runner started it (process isolation); 0
  /// for a remote worker.
  std::int64_t pid = 0;
};

// -- inspect ------------------------------------------------------------------

namespace detail {

// std::optional is not serializable in CAF 0.17: these go through
// caf::optional copies.
template <class T>
caf::optional<T> to_caf(const std::optional<T>& x) {
  return x ? caf::optional<T>{*x} : caf::optional<T>{};
}

template <class T>
std::optional<T> from_caf(const caf::optional<T>& x) {
  return x ? std::optional<T>{*x} : std::optional<T>{};
}

} // namespace detail

} // namespace cafmq::actors

namespace cafmq {

///@{
/// Lets CAF serialize the type, so that it can cross to another node.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, uuid& x) {
  auto bytes = x.bytes();
  auto load = caf::meta::load_callback([&]() -> caf::error {
    x = uuid{bytes};
    return caf::none;
  });
  return f(caf::meta::type_name("cafmq::uuid"), bytes, load);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, attempt_ref& x) {
  return f(caf::meta::type_name("cafmq::attempt_ref"), x.id, x.attempt);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, claimed_task& x) {
  using actors::detail::from_caf;
  using actors::detail::to_caf;
  auto timeout = to_caf(x.timeout);
  auto deadline_in = to_caf(x.deadline_in);
  auto json = to_caf(x.payload_json);
  auto bytes = to_caf(x.payload_bytes);
  auto parents = to_caf(x.parents_json);
  auto workflow = to_caf(x.workflow_id);
  auto load = caf::meta::load_callback([&]() -> caf::error {
    x.timeout = from_caf(timeout);
    x.deadline_in = from_caf(deadline_in);
    x.payload_json = from_caf(json);
    x.payload_bytes = from_caf(bytes);
    x.parents_json = from_caf(parents);
    x.workflow_id = from_caf(workflow);
    return caf::none;
  });
  return f(caf::meta::type_name("cafmq::claimed_task"), x.id, x.name,
           x.channel_name, x.channel_args, x.attempt, x.max_attempts, x.ordered,
           timeout, deadline_in, json, bytes, parents, workflow, load);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, checkpoint& x) {
  using actors::detail::from_caf;
  using actors::detail::to_caf;
  auto json = to_caf(x.raw_json());
  auto bytes = to_caf(x.bytes());
  auto retries = x.extra_retries();
  auto lease = to_caf(x.keep_alive());
  auto load = caf::meta::load_callback([&]() -> caf::error {
    checkpoint result;
    if (json)
      result.raw_json(*json);
    if (bytes)
      result.bytes(*bytes);
    result.extra_retries(retries);
    if (lease)
      result.keep_alive(*lease);
    x = std::move(result);
    return caf::none;
  });
  return f(caf::meta::type_name("cafmq::checkpoint"), json, bytes, retries,
           lease, load);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, task_status& x) {
  using actors::detail::from_caf;
  using actors::detail::to_caf;
  auto last_error = to_caf(x.last_error);
  auto node = to_caf(x.node);
  auto started = to_caf(x.started_at);
  auto finished = to_caf(x.finished_at);
  auto result = to_caf(x.result);
  auto load = caf::meta::load_callback([&]() -> caf::error {
    x.result = from_caf(result);
    x.last_error = from_caf(last_error);
    x.node = from_caf(node);
    x.started_at = from_caf(started);
    x.finished_at = from_caf(finished);
    return caf::none;
  });
  return f(caf::meta::type_name("cafmq::task_status"), x.state, x.name,
           x.channel_name, x.channel_args, x.attempt, x.max_attempts,
           last_error, x.cancel_requested, node, x.created_at, x.run_at,
           started, finished, x.priority, result, load);
}
///@}

} // namespace cafmq

namespace cafmq::actors {

///@{
/// Lets CAF serialize the type, so that it can cross to another node.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, task_outcome& x) {
  return f(caf::meta::type_name("cafmq::task_outcome"), x.ref, x.kind, x.error,
           x.retryable, x.result, x.worker);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, runner_stats& x) {
  return f(caf::meta::type_name("cafmq::runner_stats"), x.running, x.channels,
           x.claimed, x.completed, x.failed, x.released, x.claims,
           x.cancels_at_renewal, x.lost, x.restarts);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, spawn_request& x) {
  return f(caf::meta::type_name("cafmq::spawn_request"), x.name, x.id,
           x.channel_name, x.channel_args, x.delay, x.run_at, x.retries,
           x.backoff, x.backoff_cap, x.ordered, x.priority, x.commit_interval,
           x.timeout, x.deadline, x.unique_key, x.json, x.bytes, x.parents,
           x.on_parent_failure, x.workflow);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, spawn_reply& x) {
  return f(caf::meta::type_name("cafmq::spawn_reply"), x.id, x.created);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, task_event& x) {
  return f(caf::meta::type_name("cafmq::task_event"), x.kind, x.id, x.attempt,
           x.name, x.channel_name, x.channel_args, x.error, x.retryable, x.at,
           x.node, x.worker, x.workflow);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, event_filter& x) {
  return f(caf::meta::type_name("cafmq::event_filter"), x.by, x.value);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_offer& x) {
  return f(caf::meta::type_name("cafmq::worker_offer"), x.node, x.names,
           x.capacity, x.pid);
}
///@}

} // namespace cafmq::actors
