// SPDX-License-Identifier: BSD-3-Clause
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cafmq/actors/log.hpp"
#include "cafmq/actors/node_options.hpp"
#include "cafmq/actors/protocol.hpp"
#include "cafmq/connection_options.hpp"
#include "cafmq/registry.hpp"

namespace cafmq::actors {

/// A task whose handler is a CAF actor, spawned by the runtime for each
/// attempt and monitored. It gets (run_atom, claimed_task) as a request and
/// answers `true` on success or an error. If it throws, crashes or exits
/// before answering, the attempt fails with the exception's text or the
/// exit reason (and is retried per the task's rules) while the runtime
/// carries on. When the attempt is cancelled (cancel, timeout, deadline,
/// shutdown) it gets (cancel_atom, cancel_reason) and should answer soon:
/// one that has not answered after the runner's `handler_grace` is killed
/// and the attempt ends with that reason.
struct actor_task_definition {
  /// Makes the behavior of one attempt's handler actor from its self pointer.
  using behavior_fn
    = std::function<handler_actor::behavior_type(handler_actor::pointer)>;
  /// The task's name; not also defined in `runner_config::tasks`.
  std::string name;
  /// Makes the behavior of one attempt's handler actor.
  behavior_fn behavior;
  /// Options every spawn of this task starts from.
  task_options defaults;
  /// Overrides the runner's filter for this task when set.
  failure_filter is_failure = nullptr;

  /// A builder for one task of this definition, with its defaults applied.
  spawn_builder builder() const {
    return spawn_builder{name, defaults};
  }
};

/// What the runtime does when it loses its database connection.
enum class database_loss_policy {
  /// Keep running handlers, reconnect with backoff, log each try.
  reconnect,
  /// nq's option: cancel running handlers and stop; their tasks come back
  /// to the queue when their leases expire.
  shutdown,
};

/// Returns "reconnect" or "shutdown".
std::string to_string(database_loss_policy x);

/// Everything one runtime instance needs; read from config/cafmq.ini and the
/// command line by `config::runner`, or filled in by the embedding program.
struct runner_config {
  /// PostgreSQL URL (libpq URI or key=value string).
  std::string database_url;
  /// PostgreSQL URL of the listening connection, which also holds this
  /// runner's session (takeover); empty: database_url. Behind a pooler in
  /// transaction mode (PgBouncer), notifications and session locks do not
  /// work: point it at PostgreSQL directly, and the work still goes through
  /// the pooler.
  std::string listen_url;
  /// Statement and idle-in-transaction timeouts, TCP keepalives and the
  /// like, for every connection the runtime opens.
  connection_options connection;
  /// This runner's name in task rows; defaults to host:pid.
  std::string node;
  /// Channel names to serve (all args of each); empty: all channels.
  std::vector<std::string> channels;
  /// Claim when fewer than this many tasks run...
  int min_concurrency = 16;
  /// ...and then up to this many in total. At most this many handlers that
  /// may block run at once (one thread each), and at most this many
  /// non-blocking or actor handlers.
  int max_concurrency = 32;
  /// Claim ahead: hold up to this many claimed attempts beyond
  /// max_concurrency, queued here until a handler slot is free (so a batch
  /// is ready when handlers finish, and claims come in large batches). Their
  /// leases are renewed like running ones; a graceful stop gives back those
  /// that never started. 0: claim only for free slots.
  int prefetch = 2048;
  /// Hold ahead only what this runner finishes in this long, measured as it
  /// runs (at most `prefetch`): fast handlers get large batches, slow ones
  /// leave the queue to other runners. While full claims come back to a
  /// runner that ran out of work (start-up, bursts) it holds 4× more per
  /// claim, up to `prefetch`. 0: always hold `prefetch`.
  std::chrono::milliseconds prefetch_window{100};
  /// Direct dispatch: a spawn through this runtime (its runtime actor or a
  /// node's client) of a task it runs, made while a handler is free, claims
  /// the task in the spawn's own transaction, so it starts once that
  /// commits (one commit, no notification). Only a task that a claim would
  /// take now: due, unordered, no prioritized task waiting, its channel
  /// neither paused nor limited, not a reservation, no parents. Others, and
  /// every spawn while no handler is free, take the normal path.
  bool direct_dispatch = true;
  /// Lease of each attempt; renewed every keep_alive_interval while it runs.
  std::chrono::milliseconds lease = std::chrono::seconds{30};
  /// How often the leases of held attempts are renewed; shorter than `lease`.
  std::chrono::milliseconds keep_alive_interval = std::chrono::seconds{10};
  /// Longest sleep between claims when nothing is scheduled sooner.
  std::chrono::milliseconds max_poll_wait = std::chrono::seconds{5};
  /// The bound of a whole graceful stop, `handler_grace` included. Running
  /// handlers get until `handler_grace` and a reserve (a fifth of this, at
  /// most 1 s) are left, then their cancel fires; when only the reserve is
  /// left, handler actors still running are killed, and function handlers
  /// still running are abandoned: their attempts are handed back, and their
  /// threads are not waited for (neither by the stop nor by the actor
  /// system's destructor).
  std::chrono::milliseconds shutdown_timeout = std::chrono::seconds{30};
  /// Apply migrations at start.
  bool migrate = true;
  /// The task definitions this runner claims and runs.
  std::shared_ptr<const registry> tasks;
  /// Tasks whose handlers are actors.
  std::vector<actor_task_definition> actor_tasks;
  /// Tasks whose handlers run on worker nodes (worker.hpp): the runner
  /// knows their defaults (spawn by name, builder()) but never runs their
  /// handlers, and claims them only while a joined worker offers them. A
  /// program whose runner and workers share one registry passes it here.
  std::shared_ptr<const registry> remote_tasks;
  /// Worker processes started for the tasks marked `isolated`, and the
  /// attempts each runs at once (see cafmq/actors/isolation.hpp).
  int worker_processes = 1;
  /// Attempts each worker process runs at once; at least 1.
  int worker_process_capacity = 4;
  /// The program a worker process runs, with its arguments; empty: this
  /// program again, with the arguments it was started with.
  std::vector<std::string> worker_command;
  /// Which handler errors fail a task at once besides the default's (see
  /// failure_filter); tasks may replace it. Empty: default_is_failure.
  failure_filter is_failure = nullptr;
  /// Finished tasks are kept this long (for status and watch), then pruned
  /// in batches of prune_batch by one runner at a time.
  std::chrono::milliseconds retention = std::chrono::hours{24};
  /// Finished tasks pruned per statement.
  int prune_batch = 1000;
  /// How often maintenance (pruning, expiring reservations) runs.
  std::chrono::milliseconds maintenance_interval = std::chrono::seconds{60};
  /// When a transaction that kept vacuum from the live table's dead row
  /// versions (a held snapshot, a session idle in a transaction) ran longer
  /// than this, maintenance compacts the table once it ends: it vacuums it
  /// and rebuilds its indexes that the hold left mostly empty (REINDEX
  /// INDEX CONCURRENTLY; see cafmq::compact_live_table). Looked for every
  /// maintenance_interval, and every 5 s while one is held. 0: never.
  std::chrono::milliseconds compact_after_hold = std::chrono::seconds{60};
  /// Every second, maintenance vacuums the live table if it has at least
  /// this many dead row versions and vacuum can remove some (no transaction
  /// began before the table's last vacuum; see
  /// cafmq::vacuum_live_table_if_due). Autovacuum looks at a database once
  /// a minute by default; meanwhile each claim reads the index entries of
  /// the tasks claimed since the last vacuum. 0: leave it to autovacuum.
  int vacuum_dead_rows = 20000;
  /// How often this runner fires the due schedules (periodic tasks; each
  /// tick is spawned once across all runners); 0: never here.
  std::chrono::milliseconds schedule_interval = std::chrono::seconds{1};
  /// At most this many attempts of one (channel name, args) run at once in
  /// this runner; 0: no limit.
  int channel_concurrency = 0;
  /// A channel actor with nothing to do retires after this long.
  std::chrono::milliseconds channel_idle_timeout = std::chrono::seconds{10};
  /// Every request between the runtime's actors, and every database call,
  /// gives up after this long; a database call still running then has its
  /// connection dropped and rebuilt (a hung backend or network). Shorter
  /// than `lease - keep_alive_interval` (checked at start): a hung renewal
  /// is dropped in time for the next one to keep the lease.
  std::chrono::milliseconds request_timeout = std::chrono::seconds{15};
  /// A handler actor that has not answered this long after its cancel,
  /// timeout or deadline is killed. At a stop, the grace is part of
  /// `shutdown_timeout`.
  std::chrono::milliseconds handler_grace = std::chrono::seconds{5};
  /// A task whose attempts were lost this many times in a row (its runner
  /// died or its lease expired mid-attempt) ends failed instead of running
  /// again: a poison task. 0: no limit.
  int max_lost_attempts = 5;
  /// How often this runner looks for runners that died (their session on
  /// the listening connection ended: kill -9, a crash) and hands their tasks
  /// back at once, instead of waiting out their leases. Claimed-ahead
  /// attempts that never started get their attempt back. 0: never; this
  /// runner does not register a session either.
  std::chrono::milliseconds takeover_interval{500};
  /// When a notification this runner sends itself does not arrive (a
  /// pooler in transaction mode), it claims at least this often instead of
  /// waiting up to max_poll_wait, and logs a warning.
  std::chrono::milliseconds fallback_poll_interval{100};
  /// At most this many watches (watch_atom, from the application or a
  /// node) run at once; more are refused with errc::limit_reached. All of
  /// them share one thread and one listening connection.
  int max_watches = 10000;
  /// Restart intensity: more than `max_restarts` restarts of the runtime's
  /// actors within `restart_period` stop the runtime gracefully.
  int max_restarts = 5;
  /// The window of `max_restarts`.
  std::chrono::milliseconds restart_period = std::chrono::seconds{60};
  /// What happens when the database connection is lost. At start, under
  /// `reconnect`, a database that cannot be reached is tried again with a
  /// backoff (100 ms doubling to 5 s, each try logged) for up to
  /// `start_timeout`, and the runner's start waits; under `shutdown` the
  /// start fails at once.
  database_loss_policy on_database_loss = database_loss_policy::reconnect;
  /// How long a start under `reconnect` waits for an unreachable database.
  std::chrono::milliseconds start_timeout = std::chrono::seconds{60};
  /// Where log records go (default: stderr), and from which level.
  log_sink log = nullptr;
  /// Records below this level are dropped.
  log_level min_log_level = log_level::info;
  /// Publishing the control interface to other nodes; off by default.
  node_options publish;
  /// HOST:PORT on which this runner serves the web dashboard
  /// (cafmq/web/dashboard.hpp) while it runs; empty: no dashboard. An
  /// address that is not loopback needs `dashboard_token`.
  std::string dashboard_listen;
  /// The token the dashboard asks for (Bearer header, or `/?token=` once);
  /// empty: none.
  std::string dashboard_token;
  /// The dashboard shows the queue but refuses cancel and retry.
  bool dashboard_read_only = false;
  /// Serves Prometheus metrics over HTTP (GET /metrics) on this address:
  /// a bare port or ":PORT" binds 127.0.0.1, "HOST:PORT" binds HOST (IPv6
  /// as "[::1]:PORT"); port 0 takes any free port. Empty: no metrics.
  std::string metrics_listen;
  /// The queue-level gauges (from the cafmq.queue_* views, which count every
  /// live task) are read at most this often; scrapes in between get the
  /// last reading.
  std::chrono::milliseconds metrics_queue_interval = std::chrono::seconds{10};

  /// Every task name this runner can run itself (not remote_tasks).
  std::vector<std::string> task_names() const;
};

} // namespace cafmq::actors
