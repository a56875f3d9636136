// SPDX-License-Identifier: BSD-3-Clause
#pragma once

#include <cstdint>
#include <exception>
#include <string>

#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/expected.hpp>

/// The queue library (libqueue): spawning, claiming and recording tasks in
/// PostgreSQL, usable without the actor runtime. Errors are `errc` values.
namespace cafmq {

/// Error codes of cafmq; category atom "cafmq". Every public function returns
/// these as `caf::error` (or `caf::expected<T>`), never throws them.
enum class errc : std::uint8_t {
  none = 0,
  /// An option has a value outside its range (negative delay, retries < 0...).
  invalid_argument,
  /// A task, channel or key name is empty, too long, not UTF-8 or has a NUL.
  invalid_name,
  /// A JSON payload does not parse (or holds what PostgreSQL cannot store).
  invalid_json,
  /// A payload is larger than `payload_limit()`.
  payload_too_large,
  /// A handler could not decode its payload; never retried.
  payload_mismatch,
  /// A caller-supplied task id already exists.
  duplicate_id,
  /// No task has this id.
  unknown_task,
  /// The task already finished (completed, failed or cancelled).
  task_finished,
  /// The attempt is no longer current (re-claimed, finished or cleared):
  /// the operation changed nothing.
  stale_attempt,
  /// A two-phase reservation passed its commit deadline.
  reservation_expired,
  /// The database connection is lost or cannot be opened.
  database_unavailable,
  /// A serialization failure or deadlock: retry the whole transaction.
  conflict,
  /// Any other database error.
  database,
  /// The database schema is newer than this binary knows.
  schema_too_new,
  /// A migration failed; nothing of it was applied.
  migration_failed,
  /// A handler reported an error or threw.
  handler_failed,
  /// No handler is registered for a task name.
  unknown_handler,
  /// The database's applied migrations differ from this binary's: a
  /// migration with another name or checksum, one the binary does not know,
  /// or one missing. The context names the migration.
  schema_mismatch,
  /// The database lacks migrations this binary needs: run `cafmq migrate`.
  schema_too_old,
  /// A node refused the peer: no proof of the shared secret, a wrong one,
  /// or an answer to a nonce it did not hand out.
  access_denied,
  /// A node cannot be reached, did not answer in time, or went away.
  node_unreachable,
  /// A runtime refused a request over one of its configured bounds (e.g.
  /// `runner_config::max_watches`); try again later.
  limit_reached,
  /// The runtime that served the request stopped (or the actor that served
  /// it restarted) before the request ended.
  runtime_stopped,
};

/// Returns the enumerator's name, e.g. "invalid_json".
std::string to_string(errc x);

/// The category of cafmq errors in `caf::error`.
constexpr caf::atom_value error_category = caf::atom("cafmq");

/// An error with code `x` in the category `error_category`.
caf::error make_error(errc x);

/// The same, with `context` saying what failed; `render` shows it after the
/// code.
caf::error make_error(errc x, std::string context);

/// Returns `x` as a `cafmq::errc` if it belongs to cafmq, `errc::none` else.
errc code_of(const caf::error& x);

/// Renders any error readably, e.g. "cafmq::invalid_json: expected value".
std::string render(const caf::error& x);

/// Translates an exception (libpqxx, nlohmann, std) into a cafmq error. The
/// one place where database exceptions become error codes.
caf::error from_exception(const std::exception& e);

/// Calls `f` and turns any exception it throws into an error.
template <class F>
auto guarded(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::exception& e) {
    return from_exception(e);
  }
}

} // namespace cafmq
