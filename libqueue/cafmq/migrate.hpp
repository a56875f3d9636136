#pragma once

#include <caf/expected.hpp>

namespace pqxx {
class connection_base;
} // namespace pqxx

namespace cafmq {

/// The newest schema version this binary carries.
int latest_schema_version() noexcept;

/// Applies the missing migrations in order, in one transaction, under an
/// advisory lock so that concurrent callers wait and then find nothing to do.
/// Returns the schema version afterwards. Refuses with
/// `errc::schema_too_new` a database migrated by a newer binary.
caf::expected<int> migrate(pqxx::connection_base& conn);

/// The database's schema version; 0 if cafmq was never installed.
caf::expected<int> schema_version(pqxx::connection_base& conn);

} // namespace cafmq
