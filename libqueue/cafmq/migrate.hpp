// SPDX-License-Identifier: BSD-3-Clause
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

namespace pqxx {
class connection_base;
} // namespace pqxx

namespace cafmq {

/// The newest schema version this binary carries.
int latest_schema_version() noexcept;

/// Applies the missing migrations in order, then the SQL functions whose
/// file (`sql/functions/`) differs from what the database recorded, in one
/// transaction, under an advisory lock so that concurrent callers wait and
/// then find nothing to do. Returns the schema version afterwards. Refuses
/// with
/// `errc::schema_too_new` a database migrated by a newer binary, and with
/// `errc::schema_mismatch` one whose applied migrations are not this
/// binary's (another name or checksum for a version, a version it does not
/// know, or one missing). A database migrated before checksums were
/// recorded gets them here.
caf::expected<int> migrate(pqxx::connection_base& conn);

/// Checks without changing anything that the database holds exactly this
/// binary's migrations and SQL functions, for runners that must not
/// migrate. Returns `errc::schema_too_old` when migrations are missing (or
/// cafmq is not installed) or the functions were never recorded,
/// `errc::schema_mismatch` naming the function files whose checksum
/// differs, else the errors of `migrate`.
caf::error check_schema(pqxx::connection_base& conn);

/// The database's schema version; 0 if cafmq was never installed.
caf::expected<int> schema_version(pqxx::connection_base& conn);

/// One migration, applied or not.
struct migration_info {
  /// Its number.
  int version = 0;
  /// Its file name without the number.
  std::string name;
  /// Whether the database has it.
  bool applied = false;
};

/// Every migration this binary knows, and whether the database has it.
caf::expected<std::vector<migration_info>>
migration_status(pqxx::connection_base& conn);

/// Applies pending migrations like `migrate`, calling `on_step` before each.
caf::expected<int>
migrate(pqxx::connection_base& conn,
        const std::function<void(const migration_info&)>& on_step);

/// Like `migrate`, also calling `on_function` with the file name (e.g.
/// `claim.sql`) of each SQL function file before it is applied.
caf::expected<int>
migrate(pqxx::connection_base& conn,
        const std::function<void(const migration_info&)>& on_step,
        const std::function<void(const std::string&)>& on_function);

} // namespace cafmq
