// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// How a spawn_builder becomes one element of `cafmq.spawn`'s JSON array:
// internal to the library (spawn_many) and its tests.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cafmq/spawn.hpp"

namespace cafmq::detail {

struct spawn_access {
  /// Appends the request as JSON text to `out`; an id not set is drawn here.
  static void write_spec(const spawn_builder& x, std::string& out);

  /// The same element, parsed.
  static nlohmann::json to_spec(const spawn_builder& x);

  /// Whether `spawn_many` may write `xs` with COPY: enough of them, none
  /// with a unique key (COPY cannot skip a conflict) and every time in the
  /// range this file's timestamp writer covers.
  static bool copyable(const std::vector<spawn_builder>& xs);

  /// Whether the COPY row of `x` may leave every column but its id, names,
  /// priority and payloads to the live table's defaults (migration 0022):
  /// a pending, unordered task due now, with 5 attempts, a backoff of 1 s
  /// up to 1 h, no jitter, timeout or deadline. The server then parses no
  /// timestamp or interval for it.
  static bool takes_defaults(const spawn_builder& x);

  /// Spawns the validated `xs` with one COPY stream between the ordering
  /// locks and the wake-up notification.
  static std::vector<spawn_result>
  copy_many(pqxx::transaction_base& tx, const std::vector<spawn_builder>& xs);

  /// Whether any of `xs` has an id its caller chose.
  static bool has_chosen_ids(const std::vector<spawn_builder>& xs);

  /// Refuses, with the primary key's error, the batch whose chosen ids a
  /// finished task holds (cafmq.refuse_finished_ids): after the insert, in
  /// its transaction.
  static void refuse_finished_ids(pqxx::transaction_base& tx,
                                  const std::vector<spawn_builder>& xs);
};

} // namespace cafmq::detail
