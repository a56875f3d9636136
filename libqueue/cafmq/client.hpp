// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// Queue administration from any process: commit reservations, clear channels,
// look tasks up. Each function runs in the caller's transaction, or in one of
// its own when given a connection.

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "cafmq/connection_options.hpp"
#include "cafmq/task_status.hpp"
#include "cafmq/uuid.hpp"

namespace pqxx {
class connection_base;
class transaction_base;
} // namespace pqxx

namespace cafmq {

/// Commits two-phase reservations and wakes runners. Returns the ids
/// committed now; ids that expired, were committed before or are unknown are
/// left out.
caf::expected<std::vector<uuid>> commit(pqxx::transaction_base& tx,
                                        const std::vector<uuid>& ids);
/// The same, in a transaction of its own on `conn`.
caf::expected<std::vector<uuid>> commit(pqxx::connection_base& conn,
                                        const std::vector<uuid>& ids);

/// Deletes every task (any state) of these channel names, all args of each.
caf::expected<std::int64_t> clear(pqxx::transaction_base& tx,
                                  const std::vector<std::string>& channels);
/// The same, in a transaction of its own on `conn`.
caf::expected<std::int64_t> clear(pqxx::connection_base& conn,
                                  const std::vector<std::string>& channels);

/// Deletes every task.
caf::expected<std::int64_t> clear_all(pqxx::transaction_base& tx);
/// The same, in a transaction of its own on `conn`.
caf::expected<std::int64_t> clear_all(pqxx::connection_base& conn);

/// True while a row for the task exists (any state, until pruned).
caf::expected<bool> exists(pqxx::transaction_base& tx, const uuid& id);
/// The same, in a transaction of its own on `conn`.
caf::expected<bool> exists(pqxx::connection_base& conn, const uuid& id);

/// The task's state, attempts, last error and times; `errc::unknown_task`
/// when there is no such task.
caf::expected<task_status> status(pqxx::transaction_base& tx, const uuid& id);
/// The same, in a transaction of its own on `conn`.
caf::expected<task_status> status(pqxx::connection_base& conn, const uuid& id);

/// Removes up to `limit` reservations whose commit deadline passed.
caf::expected<std::int64_t> expire_reservations(pqxx::transaction_base& tx,
                                                int limit = 1000);
/// The same, in a transaction of its own on `conn`.
caf::expected<std::int64_t> expire_reservations(pqxx::connection_base& conn,
                                                int limit = 1000);

/// What `cancel` did.
enum class cancel_result {
  /// The task was pending, scheduled or uncommitted: it is cancelled now and
  /// will never run.
  cancelled,
  /// The task is running: its runner fires the handler's cancellation token
  /// (on the notification, or at its next lease renewal at the latest) and
  /// the task ends cancelled, without retries.
  requested,
};

/// Returns "cancelled" or "requested".
std::string to_string(cancel_result x);

/// Cancels a task from any process. `errc::unknown_task` for an unknown id,
/// `errc::task_finished` (with the final state) for a finished task. Inside
/// a transaction that rolls back, nothing is cancelled.
caf::expected<cancel_result> cancel(pqxx::transaction_base& tx, const uuid& id);
/// The same, in a transaction of its own on `conn`.
caf::expected<cancel_result> cancel(pqxx::connection_base& conn,
                                    const uuid& id);

/// Deletes up to `limit` tasks that finished more than `retention` ago. One
/// node at a time: returns -1 when another transaction is pruning.
caf::expected<std::int64_t> prune(pqxx::connection_base& conn,
                                  std::chrono::microseconds retention,
                                  int limit = 10000);

/// Follows a task from another connection of its own: calls `on_update`
/// with the current state first, then with every change (state and attempt),
/// and returns after a final state. `errc::unknown_task` at once for an
/// unknown id; `errc::reservation_expired` when a reservation disappears.
/// Notifications carry the changes; every `poll` the state is also read, in
/// case one was missed. The connection is bounded by `opts`.
caf::error watch(const std::string& url, const uuid& id,
                 const std::function<void(const task_status&)>& on_update,
                 std::chrono::milliseconds poll = std::chrono::seconds{1},
                 const connection_options& opts = {});

} // namespace cafmq
