// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/migrate.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <pqxx/pqxx>

#include "cafmq/error.hpp"
#include "cafmq/sql.hpp"
#include "cafmq/sql_schema.hpp"
#include "sql_util.hpp"

namespace cafmq {

int latest_schema_version() noexcept {
  return sql::migrations[sql::migration_count - 1].version;
}

namespace {

// Migrations that schema_version recorded without a checksum. A database
// migrated then gets this binary's checksums: it ran exactly these files,
// which never change once landed.
constexpr int last_version_without_checksum = 5;

// A row of cafmq.schema_version.
struct applied_migration {
  int version;
  std::string name;
  std::optional<std::string> checksum;
};

std::string describe(int version, const std::string& name) {
  return "migration " + std::to_string(version) + " (" + name + ")";
}

caf::error too_new(int current) {
  return make_error(errc::schema_too_new,
                    "database schema version " + std::to_string(current)
                      + " is newer than this binary's "
                      + std::to_string(latest_schema_version()));
}

caf::error too_old(int current) {
  return make_error(errc::schema_too_old,
                    "database schema version " + std::to_string(current)
                      + " is older than this binary's "
                      + std::to_string(latest_schema_version())
                      + ": run `cafmq migrate`");
}

caf::error mismatch(std::string what) {
  return make_error(errc::schema_mismatch,
                    "the database's migrations differ from this binary's: "
                      + std::move(what));
}

const sql::migration* find_migration(int version) {
  for (const auto& m : sql::migrations)
    if (m.version == version)
      return &m;
  return nullptr;
}

std::vector<applied_migration> read_applied(pqxx::transaction_base& tx) {
  std::vector<applied_migration> result;
  for (const auto& row : tx.exec(sql::migrate_applied)) {
    applied_migration x{row[0].as<int>(), row[1].c_str(), std::nullopt};
    if (!row[2].is_null())
      x.checksum = row[2].c_str();
    result.push_back(std::move(x));
  }
  return result;
}

// The database's schema version, if its migrations (`xs`, by version) are
// the binary's first ones: the same versions, names and checksums, none
// left out.
caf::expected<int> compare(const std::vector<applied_migration>& xs) {
  auto current = xs.empty() ? 0 : xs.back().version;
  if (current > latest_schema_version())
    return too_new(current);
  for (const auto& x : xs) {
    auto m = find_migration(x.version);
    if (m == nullptr || x.name != m->name)
      return mismatch("the database has " + describe(x.version, x.name)
                      + ", which this binary does not know");
    if (!x.checksum)
      return mismatch(describe(x.version, x.name) + " has no checksum");
    if (*x.checksum != m->checksum)
      return mismatch(describe(x.version, x.name) + " has checksum "
                      + *x.checksum + " in the database, " + m->checksum
                      + " in this binary");
  }
  for (const auto& m : sql::migrations) {
    if (m.version > current)
      break;
    auto applied = [&](const applied_migration& x) {
      return x.version == m.version;
    };
    if (std::none_of(xs.begin(), xs.end(), applied))
      return mismatch(describe(m.version, m.name)
                      + " is missing from the database");
  }
  return current;
}

// The binary's SQL function files whose checksum the database does not
// record (all of them where it records none).
std::vector<const sql::function_file*>
stale_functions(pqxx::transaction_base& tx) {
  std::map<std::string, std::string> applied;
  for (const auto& row : tx.exec(sql::migrate_functions))
    applied.emplace(row[0].c_str(), row[1].c_str());
  std::vector<const sql::function_file*> result;
  for (const auto& f : sql::functions) {
    auto i = applied.find(f.name);
    if (i == applied.end() || i->second != f.checksum)
      result.push_back(&f);
  }
  return result;
}

// True for a migration that adds a value to an enum type.
bool adds_enum_value(std::string_view text) {
  return text.find("ADD VALUE") != std::string_view::npos;
}

std::string file_name(const sql::function_file& f) {
  return std::string{f.name} + ".sql";
}

// Gives rows recorded before checksums existed the checksums of this
// binary's files.
void backfill(pqxx::transaction_base& tx) {
  std::vector<int> versions;
  std::vector<std::string> names;
  std::vector<std::string> checksums;
  for (const auto& m : sql::migrations) {
    if (m.version > last_version_without_checksum)
      break;
    versions.push_back(m.version);
    names.emplace_back(m.name);
    checksums.emplace_back(m.checksum);
  }
  tx.exec_params(sql::migrate_backfill, detail::int_array(versions),
                 detail::text_array(names), detail::text_array(checksums));
}

} // namespace

caf::expected<int> migrate(pqxx::connection_base& conn) {
  return migrate(conn, nullptr);
}

caf::expected<int>
migrate(pqxx::connection_base& conn,
        const std::function<void(const migration_info&)>& on_step) {
  return migrate(conn, on_step, nullptr);
}

caf::expected<int>
migrate(pqxx::connection_base& conn,
        const std::function<void(const migration_info&)>& on_step,
        const std::function<void(const std::string&)>& on_function) {
  return guarded([&]() -> caf::expected<int> {
    {
      // Up to date already (every start but the first): three reads, no
      // lock and no DDL.
      pqxx::nontransaction tx{conn};
      auto installed = tx.exec1(sql::migrate_installed);
      if (installed[0].as<bool>() && installed[1].as<bool>()
          && installed[2].as<bool>()) {
        auto current = compare(read_applied(tx));
        if (!current)
          return current;
        if (*current == latest_schema_version() && stale_functions(tx).empty())
          return current;
      }
    }
    // One transaction holds the migrations and the function files, so an
    // upgrade is all or nothing; except that a migration which adds an enum
    // value commits on its own (PostgreSQL lets no statement use the value
    // before that), and the rest follows in a new transaction.
    auto tx = std::make_unique<pqxx::work>(conn);
    auto begin = [&]() -> caf::expected<int> {
      tx->exec(sql::migrate_lock);
      tx->exec(sql::migrate_bootstrap);
      backfill(*tx);
      return compare(read_applied(*tx));
    };
    auto current = begin();
    if (!current)
      return current;
    for (const auto& m : sql::migrations) {
      if (m.version <= *current)
        continue;
      if (on_step)
        on_step(migration_info{m.version, std::string{m.name}, false});
      try {
        tx->exec(m.text);
      } catch (const pqxx::sql_error& e) {
        return make_error(errc::migration_failed,
                          describe(m.version, m.name) + " failed: " + e.what());
      }
      tx->exec_params(sql::migrate_record, m.version, std::string{m.name},
                      std::string{m.checksum});
      *current = m.version;
      if (adds_enum_value(m.text)) {
        tx->commit();
        tx.reset();
        tx = std::make_unique<pqxx::work>(conn);
        current = begin();
        if (!current)
          return current;
      }
    }
    // The functions of sql/functions/ after the migrations: each file holds
    // CREATE OR REPLACE statements for the schema the migrations leave.
    for (const auto* f : stale_functions(*tx)) {
      if (on_function)
        on_function(file_name(*f));
      try {
        tx->exec(f->text);
      } catch (const pqxx::sql_error& e) {
        return make_error(errc::migration_failed, "SQL function file "
                                                    + file_name(*f)
                                                    + " failed: " + e.what());
      }
      tx->exec_params(sql::migrate_record_function, std::string{f->name},
                      std::string{f->checksum});
    }
    tx->exec(sql::migrate_partitions);
    tx->commit();
    return current;
  });
}

caf::error check_schema(pqxx::connection_base& conn) {
  return guarded([&]() -> caf::error {
    pqxx::nontransaction tx{conn};
    auto installed = tx.exec1(sql::migrate_installed);
    if (!installed[0].as<bool>())
      return too_old(0);
    if (!installed[1].as<bool>())
      return make_error(errc::schema_too_old,
                        "schema_version records no checksums yet: run "
                        "`cafmq migrate`");
    auto current = compare(read_applied(tx));
    if (!current)
      return std::move(current.error());
    if (*current < latest_schema_version())
      return too_old(*current);
    if (!installed[2].as<bool>())
      return make_error(errc::schema_too_old,
                        "the database records no SQL function files yet: run "
                        "`cafmq migrate`");
    auto stale = stale_functions(tx);
    if (!stale.empty()) {
      std::string names;
      for (const auto* f : stale)
        names += (names.empty() ? "" : ", ") + file_name(*f);
      return make_error(errc::schema_mismatch,
                        "the database's SQL functions differ from this "
                        "binary's files "
                          + names + ": run `cafmq migrate` with this binary");
    }
    return caf::none;
  });
}

caf::expected<std::vector<migration_info>>
migration_status(pqxx::connection_base& conn) {
  return guarded([&]() -> caf::expected<std::vector<migration_info>> {
    pqxx::read_transaction tx{conn};
    std::vector<int> applied;
    if (tx.exec1(sql::migrate_installed)[0].as<bool>())
      for (const auto& x : read_applied(tx))
        applied.push_back(x.version);
    std::vector<migration_info> result;
    for (const auto& m : sql::migrations) {
      auto done
        = std::find(applied.begin(), applied.end(), m.version) != applied.end();
      result.push_back(migration_info{m.version, std::string{m.name}, done});
    }
    return result;
  });
}

caf::expected<int> schema_version(pqxx::connection_base& conn) {
  return guarded([&]() -> caf::expected<int> {
    pqxx::read_transaction tx{conn};
    if (!tx.exec1(sql::migrate_installed)[0].as<bool>())
      return 0;
    return tx.exec1(sql::migrate_version)[0].as<int>();
  });
}

} // namespace cafmq
