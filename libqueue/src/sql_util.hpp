// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// Helpers for passing values to the SQL functions (private to libqueue).

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <caf/error.hpp>
#include <pqxx/pqxx>

#include "cafmq/task_status.hpp"
#include "cafmq/uuid.hpp"

namespace cafmq::detail {

/// A statement of sql/queries/ and the name it is prepared under.
struct statement {
  const char* name;
  const char* text;
};

/// Registers `s` with libpqxx at its first use on `conn` if `conn` prepares
/// statements (`open_connection` with `connection_options::
/// prepare_statements`, or a live `prepared_statements`), and says whether
/// it does.
/// libpqxx prepares it on the server at its first execution, and again
/// after it reopens the connection.
bool prepare_once(pqxx::connection_base& conn, const statement& s);

/// Makes `conn` one that prepares statements, until it is destroyed.
std::shared_ptr<pqxx::connection>
preparing(std::unique_ptr<pqxx::connection> conn);

/// Runs `s` with `args`: prepared on a connection that prepares statements,
/// as an unnamed statement on any other (a caller's own, one to a pooler).
template <class... Ts>
pqxx::result exec_statement(pqxx::transaction_base& tx, const statement& s,
                            Ts&&... args) {
  if (prepare_once(tx.conn(), s))
    return tx.exec_prepared(s.name, std::forward<Ts>(args)...);
  return tx.exec_params(s.text, std::forward<Ts>(args)...);
}

/// A PostgreSQL array literal of quoted text elements.
std::string text_array(const std::vector<std::string>& xs);

/// text_array with NULL for the empty optionals.
std::string
optional_text_array(const std::vector<std::optional<std::string>>& xs);

std::string uuid_array(const std::vector<uuid>& xs);

std::string int_array(const std::vector<int>& xs);

std::string bool_array(const std::vector<bool>& xs);

std::string base64(std::string_view bytes);

bool valid_utf8(std::string_view str);

/// Checks a name: `max_bytes` at most, UTF-8, no NUL, non-empty if required.
caf::error check_name(const char* what, std::string_view value,
                      std::size_t max_bytes, bool allow_empty);

/// Reads a uuid column.
uuid to_uuid(const pqxx::field& f);

/// Reads a column holding microseconds (a float8 from extract()).
std::optional<std::chrono::microseconds> to_micros(const pqxx::field& f);

/// Reads a column holding microseconds since the epoch.
std::optional<std::chrono::system_clock::time_point>
to_time(const pqxx::field& f);

/// Reads a bytea column into a byte string.
std::optional<std::string> to_bytes(const pqxx::field& f);

/// A task's status from a row with the columns of `status.sql` (state, name,
/// channel_name, channel_args, attempt, max_attempts, last_error,
/// cancel_requested, node, created_us, run_at_us, started_us, finished_us).
task_status to_task_status(const pqxx::row& row);

} // namespace cafmq::detail
