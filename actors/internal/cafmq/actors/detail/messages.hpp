// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// The message types that only the runtime's own actors exchange (see
// detail/protocol.hpp), each with an `inspect` overload so that it can cross
// to another node, and the overloads of the claim primitives' types
// (detail/queue_connection.hpp). Not installed: the public message types are
// in cafmq/actors/messages.hpp.

#include <cstdint>
#include <vector>

#include <caf/meta/load_callback.hpp>
#include <caf/meta/type_name.hpp>

#include "cafmq/actors/messages.hpp"
#include "cafmq/claimed_task.hpp"
#include "cafmq/detail/queue_connection.hpp"

namespace cafmq::actors {

// -- message types ------------------------------------------------------------

/// Outcomes to write in one transaction.
struct write_batch {
  /// Attempts to record as completed.
  std::vector<attempt_ref> completed;
  /// The JSON results of the completed ones, by index ("" where none);
  /// shorter than `completed` (often empty) when the last ones have none.
  std::vector<std::string> results;
  /// The worker that ran each completed one, by index ("" where the runner
  /// did); shorter than `completed` like `results`.
  std::vector<std::string> workers;
  /// Attempts to record as failed.
  std::vector<attempt_failure> failed;
  /// Attempts to give back: never started, not counted as attempts.
  std::vector<attempt_ref> released;
  /// Attempts whose handlers were abandoned at a stop: handed back, counted.
  std::vector<attempt_ref> abandoned;

  /// True when there is nothing to write.
  bool empty() const noexcept {
    return completed.empty() && failed.empty() && released.empty()
           && abandoned.empty();
  }
};

/// What a write of outcomes did (the database actor's answer to a
/// write_batch): the tasks it completed, and the state each failure left
/// its task in. An attempt of the batch in none of these was released,
/// abandoned, or not current (its writes changed nothing).
struct write_report {
  /// Completed.
  std::vector<uuid> completed;
  /// Failed, with a retry scheduled: pending again.
  std::vector<uuid> retrying;
  /// Failed for good.
  std::vector<uuid> failed;
  /// Failed after a cancel was requested: ended cancelled.
  std::vector<uuid> cancelled;
};

/// How the database took one attempt's outcome: the completer tells its
/// owner, which reports it (task_event).
enum class written_as : std::uint8_t {
  /// Nothing was written: the attempt was no longer current (its lease was
  /// lost, another runner may have its task).
  not_current,
  completed,
  /// Failed, with a retry scheduled.
  retrying,
  /// Failed for good.
  failed,
  /// Ended cancelled.
  cancelled,
  /// Given back (released, or abandoned at a stop): pending again.
  released,
};

/// One attempt's outcome as written.
struct written_attempt {
  attempt_ref ref;
  written_as as = written_as::not_current;
};

/// What a channel's owner tells the dispatcher when attempts leave the
/// handler slots.
struct finished_counts {
  /// Attempts whose handlers succeeded.
  std::int32_t completed = 0;
  /// Attempts whose handlers failed.
  std::int32_t failed = 0;
  /// Attempts given back unstarted (or interrupted by a stop).
  std::int32_t released = 0;
  /// Ended without an outcome to write (lost lease, own transaction).
  std::int32_t recorded = 0;

  /// Every attempt that left the handler slots.
  std::int32_t total() const noexcept {
    return completed + failed + released + recorded;
  }
};

} // namespace cafmq::actors

namespace cafmq {

///@{
/// Lets CAF serialize the type, so that it can cross to another node.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, attempt_failure& x) {
  return f(caf::meta::type_name("cafmq::attempt_failure"), x.ref, x.error,
           x.retryable, x.worker);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, claim_request& x) {
  return f(caf::meta::type_name("cafmq::claim_request"), x.node, x.names,
           x.channels, x.limit, x.lease, x.max_lost, x.paused, x.pickup_every,
           x.ids);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, claim_ending& x) {
  return f(caf::meta::type_name("cafmq::claim_ending"), x.task, x.state,
           x.error);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, claim_result& x) {
  using actors::detail::from_caf;
  using actors::detail::to_caf;
  auto name = to_caf(x.cursor.channel_name);
  auto args = to_caf(x.cursor.channel_args);
  auto wait = to_caf(x.wait);
  auto load = caf::meta::load_callback([&]() -> caf::error {
    x.cursor.channel_name = from_caf(name);
    x.cursor.channel_args = from_caf(args);
    x.wait = from_caf(wait);
    return caf::none;
  });
  return f(caf::meta::type_name("cafmq::claim_result"), x.tasks, x.ended, name,
           args, wait, x.pickup, load);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, lease_state& x) {
  return f(caf::meta::type_name("cafmq::lease_state"), x.id, x.cancel_requested,
           x.ended);
}
///@}

} // namespace cafmq

namespace cafmq::actors {

///@{
/// Lets CAF serialize the type, so that it can cross to another node.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, write_batch& x) {
  return f(caf::meta::type_name("cafmq::write_batch"), x.completed, x.results,
           x.workers, x.failed, x.released, x.abandoned);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, write_report& x) {
  return f(caf::meta::type_name("cafmq::write_report"), x.completed, x.retrying,
           x.failed, x.cancelled);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, written_attempt& x) {
  auto as = static_cast<std::uint8_t>(x.as);
  auto load = caf::meta::load_callback([&]() -> caf::error {
    x.as = static_cast<written_as>(as);
    return caf::none;
  });
  return f(caf::meta::type_name("cafmq::written_attempt"), x.ref, as, load);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, finished_counts& x) {
  return f(caf::meta::type_name("cafmq::finished_counts"), x.completed,
           x.failed, x.released, x.recorded);
}
///@}

} // namespace cafmq::actors
