// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/client.hpp"

#include <algorithm>

#include <pqxx/pqxx>

#include "cafmq/detail/watch_set.hpp"
#include "cafmq/error.hpp"
#include "cafmq/sql.hpp"
#include "cafmq/task_options.hpp"
#include "sql_util.hpp"
#include "transaction.hpp"

namespace cafmq {

std::string to_string(task_state x) {
  switch (x) {
    case task_state::uncommitted:
      return "uncommitted";
    case task_state::waiting:
      return "waiting";
    case task_state::pending:
      return "pending";
    case task_state::running:
      return "running";
    case task_state::completed:
      return "completed";
    case task_state::failed:
      return "failed";
    case task_state::cancelled:
      return "cancelled";
  }
  return "unknown";
}

namespace {

constexpr task_state all_states[]
  = {task_state::uncommitted, task_state::waiting,   task_state::pending,
     task_state::running,     task_state::completed, task_state::failed,
     task_state::cancelled};

} // namespace

std::string task_state_names() {
  std::string result;
  for (auto x : all_states)
    result += (result.empty() ? "" : ", ") + to_string(x);
  return result;
}

std::optional<task_state> parse_task_state(const std::string& str) {
  for (auto x : all_states)
    if (to_string(x) == str)
      return x;
  return std::nullopt;
}

caf::expected<std::vector<uuid>> commit(pqxx::transaction_base& tx,
                                        const std::vector<uuid>& ids) {
  return guarded([&]() -> caf::expected<std::vector<uuid>> {
    std::vector<uuid> result;
    for (const auto& row : tx.exec_params(sql::commit, detail::uuid_array(ids)))
      result.push_back(detail::to_uuid(row[0]));
    return result;
  });
}

caf::expected<std::vector<uuid>> commit(pqxx::connection_base& conn,
                                        const std::vector<uuid>& ids) {
  return detail::in_transaction(
    conn, [&](pqxx::transaction_base& tx) { return commit(tx, ids); });
}

caf::expected<std::int64_t> clear(pqxx::transaction_base& tx,
                                  const std::vector<std::string>& channels) {
  for (const auto& name : channels)
    if (auto err
        = detail::check_name("channel name", name, max_name_bytes, true))
      return err;
  return guarded([&]() -> caf::expected<std::int64_t> {
    return tx.exec_params1(sql::clear, detail::text_array(channels))[0]
      .as<std::int64_t>();
  });
}

caf::expected<std::int64_t> clear(pqxx::connection_base& conn,
                                  const std::vector<std::string>& channels) {
  return detail::in_transaction(
    conn, [&](pqxx::transaction_base& tx) { return clear(tx, channels); });
}

caf::expected<std::int64_t> clear_all(pqxx::transaction_base& tx) {
  return guarded([&]() -> caf::expected<std::int64_t> {
    return tx.exec1(sql::clear_all)[0].as<std::int64_t>();
  });
}

caf::expected<std::int64_t> clear_all(pqxx::connection_base& conn) {
  return detail::in_transaction(
    conn, [&](pqxx::transaction_base& tx) { return clear_all(tx); });
}

caf::expected<bool> exists(pqxx::transaction_base& tx, const uuid& id) {
  return guarded([&]() -> caf::expected<bool> {
    return tx.exec_params1(sql::exists, to_string(id))[0].as<bool>();
  });
}

caf::expected<bool> exists(pqxx::connection_base& conn, const uuid& id) {
  return detail::in_transaction(
    conn, [&](pqxx::transaction_base& tx) { return exists(tx, id); });
}

namespace {

// The task's status; for a reservation, also how long it has left to be
// committed (database clock) in `commit_left`.
caf::expected<task_status>
read_status(pqxx::transaction_base& tx, const uuid& id,
            std::optional<std::chrono::microseconds>* commit_left = nullptr) {
  return guarded([&]() -> caf::expected<task_status> {
    auto rows = tx.exec_params(sql::status, detail::uuid_array({id}));
    if (rows.empty())
      return make_error(errc::unknown_task, "no task with id " + to_string(id));
    const auto& row = rows[0];
    // Expired at its deadline, not when maintenance removes it.
    if (row["expired"].as<bool>())
      return make_error(errc::reservation_expired,
                        "task " + to_string(id)
                          + " was not committed before its deadline");
    if (commit_left != nullptr && !row["commit_left_us"].is_null())
      *commit_left
        = std::chrono::microseconds{row["commit_left_us"].as<std::int64_t>()};
    return detail::to_task_status(row);
  });
}

caf::expected<task_status>
read_status(pqxx::connection_base& conn, const uuid& id,
            std::optional<std::chrono::microseconds>* commit_left = nullptr) {
  return detail::in_transaction(conn, [&](pqxx::transaction_base& tx) {
    return read_status(tx, id, commit_left);
  });
}

} // namespace

caf::expected<task_status> status(pqxx::transaction_base& tx, const uuid& id) {
  return read_status(tx, id);
}

caf::expected<task_status> status(pqxx::connection_base& conn, const uuid& id) {
  return read_status(conn, id);
}

caf::expected<std::int64_t> expire_reservations(pqxx::transaction_base& tx,
                                                int limit) {
  return guarded([&]() -> caf::expected<std::int64_t> {
    return tx.exec_params1(sql::expire_reservations, limit)[0]
      .as<std::int64_t>();
  });
}

caf::expected<std::int64_t> expire_reservations(pqxx::connection_base& conn,
                                                int limit) {
  return detail::in_transaction(conn, [&](pqxx::transaction_base& tx) {
    return expire_reservations(tx, limit);
  });
}

std::string to_string(cancel_result x) {
  return x == cancel_result::cancelled ? "cancelled" : "requested";
}

caf::expected<cancel_result> cancel(pqxx::transaction_base& tx,
                                    const uuid& id) {
  return guarded([&]() -> caf::expected<cancel_result> {
    auto result
      = tx.exec_params1(sql::cancel, to_string(id))[0].as<std::string>();
    if (result == "cancelled")
      return cancel_result::cancelled;
    if (result == "requested")
      return cancel_result::requested;
    if (result == "unknown")
      return make_error(errc::unknown_task, "no task with id " + to_string(id));
    if (result == "expired")
      return make_error(errc::reservation_expired,
                        "task " + to_string(id)
                          + " was not committed before its deadline");
    // "already completed", "already failed" or "already cancelled".
    return make_error(errc::task_finished,
                      "task " + to_string(id) + " " + result);
  });
}

caf::expected<cancel_result> cancel(pqxx::connection_base& conn,
                                    const uuid& id) {
  return detail::in_transaction(
    conn, [&](pqxx::transaction_base& tx) { return cancel(tx, id); });
}

caf::expected<std::int64_t> prune(pqxx::connection_base& conn,
                                  std::chrono::microseconds retention,
                                  int limit) {
  return detail::in_transaction(
    conn, [&](pqxx::transaction_base& tx) -> caf::expected<std::int64_t> {
      return tx.exec_params1(sql::prune, retention.count(), limit)[0]
        .as<std::int64_t>();
    });
}

caf::error watch(const std::string& url, const uuid& id,
                 const std::function<void(const task_status&)>& on_update,
                 std::chrono::milliseconds poll,
                 const connection_options& opts) {
  auto opened = open_connection(url, opts);
  if (!opened)
    return std::move(opened.error());
  return guarded([&]() -> caf::error {
    detail::watch_set set{poll};
    set.attach(**opened);
    set.add(id);
    caf::error result;
    auto report = [&](const uuid&, caf::expected<task_status> x) {
      if (x)
        on_update(*x);
      else
        result = std::move(x.error());
    };
    while (!set.empty())
      set.poll(poll, report);
    return result;
  });
}

} // namespace cafmq
