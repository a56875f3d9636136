#pragma once

// Queue administration from any process: commit reservations, clear channels,
// look tasks up. Each function runs in the caller's transaction, or in one of
// its own when given a connection.

#include <cstdint>
#include <string>
#include <vector>

#include <caf/expected.hpp>

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
caf::expected<std::vector<uuid>> commit(pqxx::connection_base& conn,
                                        const std::vector<uuid>& ids);

/// Deletes every task (any state) of these channel names, all args of each.
caf::expected<std::int64_t> clear(pqxx::transaction_base& tx,
                                  const std::vector<std::string>& channels);
caf::expected<std::int64_t> clear(pqxx::connection_base& conn,
                                  const std::vector<std::string>& channels);

/// Deletes every task.
caf::expected<std::int64_t> clear_all(pqxx::transaction_base& tx);
caf::expected<std::int64_t> clear_all(pqxx::connection_base& conn);

/// True while a row for the task exists (any state, until pruned).
caf::expected<bool> exists(pqxx::transaction_base& tx, const uuid& id);
caf::expected<bool> exists(pqxx::connection_base& conn, const uuid& id);

/// The task's state, attempts, last error and times; `errc::unknown_task`
/// when there is no such task.
caf::expected<task_status> status(pqxx::transaction_base& tx, const uuid& id);
caf::expected<task_status> status(pqxx::connection_base& conn, const uuid& id);

/// Removes up to `limit` reservations whose commit deadline passed.
caf::expected<std::int64_t> expire_reservations(pqxx::transaction_base& tx,
                                                int limit = 1000);
caf::expected<std::int64_t> expire_reservations(pqxx::connection_base& conn,
                                                int limit = 1000);

} // namespace cafmq
