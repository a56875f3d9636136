// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// Bounds on every connection cafmq opens, so that nothing waits forever on a
// server or a network that stopped answering.
//
// A setting already in the connection URL, or in a libpq environment
// variable (PGAPPNAME, PGCONNECT_TIMEOUT, PGOPTIONS), wins over the value in
// `connection_options`.
//
// The two timeouts are server settings. cafmq sends them in the startup
// parameter `options` (`-c statement_timeout=...`), where they rank above
// `ALTER ROLE ... SET`; leave one empty to keep the server's value.
// PgBouncer refuses the startup parameter `options` unless its
// `ignore_startup_parameters` lists it, and then drops it. `open_connection`
// notices the refusal ("unsupported startup parameter: options"), connects
// again without `options` (the two timeouts are then the server's), and
// does so at once for that URL from then on; `startup_options_refused`
// tells whoever logs. To choose instead: with session pooling set
// `send_session_settings` to false, and cafmq runs `SET` right after
// connecting; with transaction pooling a `SET` lands on whichever server
// connection served it, so leave both timeouts empty and set them on the
// role.
//
// The other settings are libpq's, on the client's TCP socket (nothing on a
// Unix socket): keepalives find a peer that vanished while the connection is
// idle, tcp_user_timeout one that vanished while a request is unacknowledged.
// Neither finds a server that acknowledges but never answers (stopped,
// swapping, stuck on a lock with statement_timeout off): see
// `connection_breaker`.

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include <caf/expected.hpp>

namespace pqxx {
class connection_base;
} // namespace pqxx

namespace cafmq {

/// How cafmq's connections are bounded. Zero and empty mean what each field
/// says; a negative value is refused with `errc::invalid_argument`.
struct connection_options {
  /// Cancels a statement that runs longer; zero: no limit; empty: the
  /// server's setting.
  std::optional<std::chrono::milliseconds> statement_timeout
    = std::chrono::seconds{30};

  /// Ends a session that stays idle inside a transaction for longer, and
  /// with it the locks it holds; zero: no limit; empty: the server's setting.
  std::optional<std::chrono::milliseconds> idle_in_transaction_session_timeout
    = std::chrono::seconds{60};

  /// Sends the two timeouts in the startup packet; false: runs `SET` right
  /// after connecting (for PgBouncer).
  bool send_session_settings = true;

  /// Enables TCP keepalives.
  bool keepalives = true;

  /// Idle time before the first keepalive probe; zero: the system's default.
  std::chrono::seconds keepalives_idle{10};

  /// Time between unanswered probes; zero: the system's default.
  std::chrono::seconds keepalives_interval{5};

  /// Unanswered probes that mark the connection dead; zero: the system's
  /// default.
  int keepalives_count = 3;

  /// Longest time sent data may stay unacknowledged before the connection is
  /// dropped; zero: the system's default (minutes of retransmissions).
  std::chrono::milliseconds tcp_user_timeout{30000};

  /// Longest wait for a connection to open, per host; zero: no limit.
  /// libpq turns 1 into 2.
  std::chrono::seconds connect_timeout{10};

  /// Shown in `pg_stat_activity`; empty: none.
  std::string application_name = "cafmq";

  /// Runs cafmq's statements of the per-task path (spawn, claim, complete,
  /// fail, renew, ...) as prepared statements, each prepared once per
  /// connection on its first use: the server parses and plans them once.
  /// Off by itself on a URL whose server refused the startup parameter
  /// `options` (PgBouncer) and with `send_session_settings` false (set for
  /// a pooler): a pooler in transaction mode before PgBouncer 1.21 runs
  /// each statement on whichever server connection is free, where the
  /// statement was not prepared. Set it false behind such a pooler that
  /// accepts `options` (PgBouncer's `ignore_startup_parameters`).
  bool prepare_statements = true;
};

/// Returns `url` (a libpq URI, `postgresql://...` or `postgres://...`, or a
/// key=value string) extended by the settings of `opts` that it does not
/// make itself, in the same form. Fails with `errc::invalid_argument` for a
/// malformed URL or a negative setting. With `send_session_settings` false
/// the result leaves out the two timeouts: `open_connection` sets them.
caf::expected<std::string>
connection_string(const std::string& url, const connection_options& opts = {});

/// While it lives, cafmq's statements of the per-task path (`complete(tx)`,
/// `fail`, `checkpoint`, a spawn of one or a few tasks, ...) run prepared on
/// `conn`, a connection of the application's: each is prepared once, at its
/// first use there, so the server parses and plans it once. The
/// connections of `open_connection` (and so of the runtime) do so by
/// themselves (`connection_options::prepare_statements`). Not for a
/// connection to a pooler in transaction mode (PgBouncer before 1.21),
/// whose server connections change between transactions. Destroy it before
/// `conn`; with several for one connection, until the last is destroyed.
class prepared_statements {
public:
  /// Starts preparing cafmq's statements on `conn`.
  explicit prepared_statements(pqxx::connection_base& conn);
  /// Stops it: cafmq's statements on `conn` run unprepared again (what the
  /// server prepared stays until the connection ends).
  ~prepared_statements();
  /// Not copied: make another for the same connection instead.
  prepared_statements(const prepared_statements&) = delete;
  /// Not copied: make another for the same connection instead.
  prepared_statements& operator=(const prepared_statements&) = delete;

private:
  pqxx::connection_base* conn_;
};

/// Opens a libpqxx connection to `url` with `opts` in effect, for owners that
/// need libpqxx itself (LISTEN). libpqxx reopens a broken connection on its
/// next use, with the same settings; a `connection_breaker` made for it
/// watches the first socket only.
caf::expected<std::shared_ptr<pqxx::connection_base>>
open_connection(const std::string& url, const connection_options& opts = {});

/// True once a server at `url` refused the startup parameter `options` in
/// this process (PgBouncer without `ignore_startup_parameters = options`):
/// `open_connection` connects to it without `options` since. Thread-safe.
bool startup_options_refused(const std::string& url);

} // namespace cafmq
