// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// The web dashboard: one HTML page (embedded in the library) and a JSON API
// under /api/ over the functions of cafmq/admin.hpp and cafmq/client.hpp.
// It serves on threads of its own, each request on a database connection of
// its own (from a small pool; never shared between threads).
//
// Security: it listens on loopback unless told otherwise, and a non-loopback
// address needs a token or a user and password. With neither, only requests
// whose Host names a loopback address are served (DNS rebinding). A token
// is taken as `Authorization: Bearer T`, or once as `/?token=T`, which sets
// an HttpOnly SameSite=Strict session cookie. Every action is a POST that
// carries the page's per-process CSRF token in `X-CSRF-Token` (unless it
// authenticates with a Bearer header) and no foreign Origin; read-only mode
// refuses actions with 403.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <caf/error.hpp>

#include "cafmq/connection_options.hpp"

/// The web dashboard (library cafmq::web).
namespace cafmq::web {

/// A runner's handler slots in use (the dashboard's occupancy chart).
struct handler_occupancy {
  /// Handlers running.
  std::int64_t running = 0;
  /// Handler slots: at most this many run at once.
  std::int64_t slots = 0;
};

/// How the dashboard serves.
struct dashboard_options {
  /// HOST:PORT to listen on (`[::1]:8080` for IPv6); port 0: any free port.
  std::string listen = "127.0.0.1:8080";
  /// Requests must carry this token; empty: no token.
  std::string token;
  /// Requests may authenticate with HTTP basic auth as this user with this
  /// password; an empty user: no basic auth.
  std::string user;
  /// The password of `user`.
  std::string password;
  /// Shows the queue, refuses every action (403) and hides their buttons.
  bool read_only = false;
  /// At most this many database connections are open at once (requests
  /// beyond wait for one).
  int connections = 4;
  /// The charts sample the queue this often, one query each time (live
  /// counts and the tasks finished since the last sample; no scan of
  /// finished tasks), whether or not a page is open; zero or less: no
  /// charts.
  std::chrono::milliseconds chart_interval{10000};
  /// Points each chart keeps (the oldest go first).
  int chart_points = 180;
  /// Where a runner serves the dashboard: its handler occupancy, read at
  /// each sample (the occupancy chart); unset: no such chart.
  std::function<std::optional<handler_occupancy>()> occupancy;
};

/// An HTTP server for the dashboard of one database.
class dashboard {
public:
  /// Serves the database at `url` (a libpq URL) once started; connections
  /// are bounded by `conn_opts`.
  dashboard(std::string url, dashboard_options opts,
            connection_options conn_opts = {});

  /// Stops serving.
  ~dashboard();

  dashboard(const dashboard&) = delete;
  dashboard& operator=(const dashboard&) = delete;

  /// Binds the address and serves on threads of its own. Errors:
  /// `errc::invalid_argument` for a malformed address, a non-loopback one
  /// without authentication, or one that cannot be bound (in use, not
  /// local); `errc::database_unavailable` when the database cannot be
  /// reached.
  caf::error start();

  /// The port it listens on once started (the bound one for port 0).
  std::uint16_t port() const;

  /// Stops serving and waits for the requests in progress. Idempotent.
  void stop();

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// Serves the dashboard of the database at `url` until SIGINT or SIGTERM;
/// logs its address to stderr. Returns the exit code: 0 after a signal, 1
/// when it cannot start (the error on stderr).
int run_dashboard(const std::string& url, const dashboard_options& opts,
                  const connection_options& conn_opts = {});

} // namespace cafmq::web
