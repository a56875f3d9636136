// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// What the commands share: exit codes from errors, formatting, arguments,
// connections, the stats and task tables.

#include <atomic>
#include <chrono>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <caf/expected.hpp>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include "cafmq/admin.hpp"
#include "cafmq/error.hpp"
#include "cafmq/task_status.hpp"
#include "cafmq/uuid.hpp"
#include "commands.hpp"

namespace cafmq::cli {

using json = nlohmann::ordered_json;

/// Prints the error and returns its exit code.
int fail(const caf::error& err);

/// Prints why the command line is wrong and returns exit_usage.
int usage(const std::string& why);

/// A time as ISO 8601 UTC, to the second.
std::string fmt_time(std::chrono::system_clock::time_point t);

/// A time with milliseconds, or null.
json time_json(const std::optional<std::chrono::system_clock::time_point>& t);

/// The value, or null.
template <class T>
json opt_json(const std::optional<T>& x) {
  return x ? json(*x) : json(nullptr);
}

/// One line "id=... state=..." of a task's status.
void print_status(const uuid& id, const task_status& st);

/// A task's attempts, one indented line each (under its status line).
void print_attempts(const std::vector<attempt_record>& xs);

/// What a bulk cancel did, as JSON or as one line of text.
void print_cancel_counts(const context& ctx, const cancel_counts& x);

/// One line of text at most `n` characters long.
std::string clip(std::string x, size_t n);

/// Rows of text in aligned columns, the first row a header.
void print_table(std::ostream& out,
                 const std::vector<std::vector<std::string>>& rows);

/// A task id, or a clear error.
caf::expected<uuid> parse_id(const std::string& x);

/// The filter of the filter options.
caf::expected<task_filter> to_filter(const filter_args& x);

/// The tasks of a bulk command: ids, or a filter, not both.
caf::expected<std::pair<std::vector<uuid>, task_filter>>
to_targets(const std::string& what, const std::vector<std::string>& texts,
           const filter_args& args);

/// A connection to a database that holds this binary's schema (unchecked
/// with `check` false).
caf::expected<std::shared_ptr<pqxx::connection_base>>
connect(const context& ctx, bool check = true);

// Runs `f` on a checked connection; errors become exit codes.
template <class F>
int with_connection(const context& ctx, F f, bool check = true) {
  auto conn = connect(ctx, check);
  if (!conn)
    return fail(conn.error());
  auto rc = guarded([&]() -> caf::expected<int> { return f(**conn); });
  return rc ? *rc : fail(rc.error());
}

/// Queue stats as JSON.
json to_json(const std::vector<queue_stat>& xs);

/// Queue stats as a table.
void print_stats(std::ostream& out, const std::vector<queue_stat>& xs,
                 bool live_only);

/// A page of tasks as table rows.
std::vector<std::vector<std::string>> task_table(const task_page& page);

/// Set by SIGINT while `top` runs.
extern std::atomic<bool> interrupted;

} // namespace cafmq::cli
