#include "cafmq/migrate.hpp"

#include <pqxx/pqxx>

#include "cafmq/error.hpp"
#include "cafmq/sql.hpp"

namespace cafmq {

int latest_schema_version() noexcept {
  return sql::migrations[sql::migration_count - 1].version;
}

namespace {

caf::error too_new(int current) {
  return make_error(errc::schema_too_new,
                    "database schema version " + std::to_string(current)
                      + " is newer than this binary's "
                      + std::to_string(latest_schema_version()));
}

} // namespace

caf::expected<int> migrate(pqxx::connection_base& conn) {
  return guarded([&]() -> caf::expected<int> {
    {
      // Up to date already (every start but the first): two reads, no lock
      // and no DDL.
      pqxx::nontransaction tx{conn};
      if (tx.exec1(sql::migrate_installed)[0].as<bool>()) {
        auto current = tx.exec1(sql::migrate_version)[0].as<int>();
        if (current > latest_schema_version())
          return too_new(current);
        if (current == latest_schema_version())
          return current;
      }
    }
    pqxx::work tx{conn};
    tx.exec(sql::migrate_lock);
    tx.exec(sql::migrate_bootstrap);
    auto current = tx.exec1(sql::migrate_version)[0].as<int>();
    if (current > latest_schema_version())
      return too_new(current);
    for (const auto& m : sql::migrations) {
      if (m.version <= current)
        continue;
      try {
        tx.exec(m.text);
      } catch (const pqxx::sql_error& e) {
        return make_error(errc::migration_failed,
                          "migration " + std::to_string(m.version) + " ("
                            + m.name + ") failed: " + e.what());
      }
      tx.exec_params(sql::migrate_record, m.version, std::string{m.name});
      current = m.version;
    }
    tx.commit();
    return current;
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
