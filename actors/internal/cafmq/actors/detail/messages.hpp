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
           x.retryable);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, claim_request& x) {
  return f(caf::meta::type_name("cafmq::claim_request"), x.node, x.names,
           x.channels, x.limit, x.lease, x.max_lost, x.paused, x.pickup_every);
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
  return f(caf::meta::type_name("cafmq::claim_result"), x.tasks, name, args,
           wait, x.pickup, load);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, lease_state& x) {
  return f(caf::meta::type_name("cafmq::lease_state"), x.id,
           x.cancel_requested);
}
///@}

} // namespace cafmq

namespace cafmq::actors {

///@{
/// Lets CAF serialize the type, so that it can cross to another node.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, write_batch& x) {
  return f(caf::meta::type_name("cafmq::write_batch"), x.completed, x.results,
           x.failed, x.released, x.abandoned);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, finished_counts& x) {
  return f(caf::meta::type_name("cafmq::finished_counts"), x.completed,
           x.failed, x.released, x.recorded);
}
///@}

} // namespace cafmq::actors
