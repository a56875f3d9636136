// SPDX-License-Identifier: BSD-3-Clause
// The live table after a held snapshot (see cafmq/admin.hpp): vacuum and
// index rebuilds, which run outside any transaction.
#include <pqxx/pqxx>

#include "cafmq/admin.hpp"
#include "cafmq/error.hpp"
#include "cafmq/sql.hpp"

namespace cafmq {

caf::expected<std::optional<std::chrono::milliseconds>>
oldest_snapshot(pqxx::connection_base& conn) {
  return guarded(
    [&]() -> caf::expected<std::optional<std::chrono::milliseconds>> {
      pqxx::nontransaction tx{conn};
      auto x = tx.exec1(sql::oldest_snapshot)[0];
      if (x.is_null())
        return std::optional<std::chrono::milliseconds>{};
      return std::chrono::milliseconds{x.as<std::int64_t>()};
    });
}

caf::expected<std::vector<std::string>>
vacuum_live_table(pqxx::connection_base& conn, std::int64_t min_index_bytes) {
  return guarded([&]() -> caf::expected<std::vector<std::string>> {
    pqxx::nontransaction tx{conn};
    // INDEX_CLEANUP ON: with few dead rows, vacuum may leave their line
    // pointers (and so their pages) to the next one; this one is to free
    // the pages at the table's end.
    tx.exec0("VACUUM (INDEX_CLEANUP ON) cafmq.tasks_live");
    std::vector<std::string> rebuild;
    for (const auto& row :
         tx.exec_params(sql::live_index_upkeep, min_index_bytes)) {
      auto name = row[0].as<std::string>();
      if (row[1].as<std::string>() == "drop")
        tx.exec0("DROP INDEX CONCURRENTLY IF EXISTS cafmq."
                 + tx.quote_name(name));
      else
        rebuild.push_back(std::move(name));
    }
    return rebuild;
  });
}

caf::expected<bool> vacuum_live_table_if_due(pqxx::connection_base& conn,
                                             std::int64_t min_dead_rows) {
  return guarded([&]() -> caf::expected<bool> {
    pqxx::nontransaction tx{conn};
    if (!tx.exec_params1(sql::live_vacuum_due, min_dead_rows)[0].as<bool>())
      return false;
    tx.exec0("VACUUM (SKIP_LOCKED) cafmq.tasks_live");
    return true;
  });
}

caf::expected<std::int64_t> rebuild_live_index(pqxx::connection_base& conn,
                                               const std::string& name) {
  return guarded([&]() -> caf::expected<std::int64_t> {
    pqxx::nontransaction tx{conn};
    if (tx.exec_params(sql::live_index_size, name).empty())
      return make_error(errc::invalid_argument,
                        "no index of cafmq.tasks_live is named " + name);
    tx.exec0("REINDEX INDEX CONCURRENTLY cafmq." + tx.quote_name(name));
    return tx.exec_params1(sql::live_index_size, name)[0].as<std::int64_t>();
  });
}

caf::expected<compaction_report>
compact_live_table(pqxx::connection_base& conn, std::int64_t min_index_bytes) {
  compaction_report report;
  auto measure = [&]() -> caf::expected<std::int64_t> {
    return guarded([&]() -> caf::expected<std::int64_t> {
      pqxx::nontransaction tx{conn};
      return tx.exec1(sql::live_table_size)[0].as<std::int64_t>();
    });
  };
  auto before = measure();
  if (!before)
    return std::move(before.error());
  report.bytes_before = *before;
  auto names = vacuum_live_table(conn, min_index_bytes);
  if (!names)
    return std::move(names.error());
  for (const auto& name : *names) {
    if (auto rebuilt = rebuild_live_index(conn, name); !rebuilt)
      return std::move(rebuilt.error());
    report.rebuilt.push_back(name);
  }
  if (auto again = vacuum_live_table(conn, min_index_bytes); !again)
    return std::move(again.error());
  auto after = measure();
  if (!after)
    return std::move(after.error());
  report.bytes_after = *after;
  return report;
}

} // namespace cafmq
