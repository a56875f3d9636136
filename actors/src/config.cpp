// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/actors/config.hpp"

#include <cstdlib>

#include <caf/config_value.hpp>
#include <caf/settings.hpp>

#include "cafmq/error.hpp"

namespace cafmq::actors {

config::config() {
  cafmq::actors::add_message_types(*this);
  opt_group{custom_options_, "cafmq"}
    .add(database_url, "database-url",
         "PostgreSQL URL (default: CAFMQ_DATABASE_URL)")
    .add(listen_url, "listen-url",
         "PostgreSQL URL of the listening connection (default: database-url;"
         " behind a pooler in transaction mode: a direct one)")
    .add(node, "node", "runner name in task rows (default: host:pid)")
    .add(channels, "channels", "channel names to serve (default: all)")
    .add(min_concurrency, "min-concurrency", "claim below this many running")
    .add(max_concurrency, "max-concurrency", "at most this many running")
    .add(prefetch, "prefetch",
         "claimed attempts held beyond max-concurrency (claim ahead)")
    .add(prefetch_window, "prefetch-window",
         "hold ahead what the runner finishes in this long (0: prefetch)")
    .add(lease, "lease", "lease of each attempt")
    .add(keep_alive_interval, "keep-alive-interval",
         "how often leases are renewed")
    .add(max_poll_wait, "max-poll-wait", "longest sleep between claims")
    .add(shutdown_timeout, "shutdown-timeout",
         "how long a stop waits for running handlers")
    .add(migrate, "migrate", "apply migrations at start")
    .add(retention, "retention", "how long finished tasks are kept")
    .add(maintenance_interval, "maintenance-interval",
         "how often finished tasks are pruned")
    .add(channel_concurrency, "channel-concurrency",
         "at most this many running per channel (0: no limit)")
    .add(prune_batch, "prune-batch", "finished tasks pruned per statement")
    .add(channel_idle_timeout, "channel-idle-timeout",
         "an idle channel actor retires after this long")
    .add(request_timeout, "request-timeout",
         "bound of every request and database call (a longer call's "
         "connection is dropped and rebuilt)")
    .add(statement_timeout, "statement-timeout",
         "server-side bound of every statement (0: none)")
    .add(idle_in_transaction_timeout, "idle-in-transaction-timeout",
         "server-side bound of an idle transaction (0: none)")
    .add(send_session_settings, "send-session-settings",
         "send the two timeouts in the startup packet (false: SET after "
         "connecting, for PgBouncer)")
    .add(keepalives_idle, "keepalives-idle",
         "TCP keepalive: idle time before the first probe")
    .add(keepalives_interval, "keepalives-interval",
         "TCP keepalive: time between probes")
    .add(keepalives_count, "keepalives-count",
         "TCP keepalive: probes before the connection is dead")
    .add(handler_grace, "handler-grace",
         "a handler actor ignoring its cancel is killed after this long")
    .add(max_lost_attempts, "max-lost-attempts",
         "a task whose attempts were lost this many times in a row fails "
         "(0: no limit)")
    .add(takeover_interval, "takeover-interval",
         "how often dead runners' tasks are looked for and handed back "
         "(0: never)")
    .add(fallback_poll_interval, "fallback-poll-interval",
         "claim at least this often when notifications do not arrive")
    .add(worker_processes, "worker-processes",
         "worker processes started for the isolated tasks")
    .add(worker_process_capacity, "worker-process-capacity",
         "attempts each worker process runs at once")
    .add(max_restarts, "max-restarts",
         "restarts of the runtime's actors allowed within restart-period")
    .add(restart_period, "restart-period", "window of max-restarts")
    .add(on_database_loss, "on-database-loss",
         "reconnect (default) or shutdown")
    .add(start_timeout, "start-timeout",
         "how long a start waits for an unreachable database (reconnect)")
    .add(log_level_name, "log-level", "debug, info, warning or error");
  opt_group{custom_options_, "cafmq.publish"}
    .add(node_host, "host", "address to publish the control interface on")
    .add(node_port, "port",
         "port to publish on (-1: not published, 0: any free port)")
    .add(node_secret, "secret",
         "shared secret a peer must prove (required without TLS)");
}

caf::expected<runner_config>
config::runner(std::shared_ptr<const registry> tasks) const {
  if (on_database_loss != "reconnect" && on_database_loss != "shutdown")
    return make_error(errc::invalid_argument,
                      "cafmq.on-database-loss must be reconnect or shutdown, "
                      "got "
                        + on_database_loss);
  if (log_level_name != "debug" && log_level_name != "info"
      && log_level_name != "warning" && log_level_name != "error")
    return make_error(errc::invalid_argument,
                      "cafmq.log-level must be debug, info, warning or "
                      "error, got "
                        + log_level_name);
  // CAF 0.17 keeps an INI section [cafmq.publish] in the config's content
  // without writing it to the bound members (the command line does both).
  auto port = caf::get_or(*this, "cafmq.publish.port", node_port);
  if (port < -1 || port > 65535)
    return make_error(errc::invalid_argument,
                      "cafmq.publish.port must be -1 (off) or 0..65535, got "
                        + std::to_string(port));
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  runner_config result;
  if (port >= 0)
    result.publish.port = static_cast<std::uint16_t>(port);
  result.publish.host = caf::get_or(*this, "cafmq.publish.host", node_host);
  result.publish.secret
    = caf::get_or(*this, "cafmq.publish.secret", node_secret);
  // TLS: CAF's own openssl.* options, which its openssl module reads.
  result.publish.tls.certificate = openssl_certificate;
  result.publish.tls.key = openssl_key;
  result.publish.tls.cafile = openssl_cafile;
  result.publish.tls.passphrase = openssl_passphrase;
  result.database_url = database_url;
  if (result.database_url.empty())
    if (auto env = std::getenv("CAFMQ_DATABASE_URL"))
      result.database_url = env;
  result.listen_url = listen_url;
  result.node = node;
  result.channels = channels;
  result.min_concurrency = min_concurrency;
  result.max_concurrency = max_concurrency;
  result.prefetch = prefetch;
  result.prefetch_window = duration_cast<milliseconds>(prefetch_window);
  result.lease = duration_cast<milliseconds>(lease);
  result.keep_alive_interval = duration_cast<milliseconds>(keep_alive_interval);
  result.max_poll_wait = duration_cast<milliseconds>(max_poll_wait);
  result.shutdown_timeout = duration_cast<milliseconds>(shutdown_timeout);
  result.migrate = migrate;
  result.retention = duration_cast<milliseconds>(retention);
  result.maintenance_interval
    = duration_cast<milliseconds>(maintenance_interval);
  result.channel_concurrency = channel_concurrency;
  result.prune_batch = prune_batch;
  result.channel_idle_timeout
    = duration_cast<milliseconds>(channel_idle_timeout);
  result.request_timeout = duration_cast<milliseconds>(request_timeout);
  result.handler_grace = duration_cast<milliseconds>(handler_grace);
  result.connection.statement_timeout
    = duration_cast<milliseconds>(statement_timeout);
  result.connection.idle_in_transaction_session_timeout
    = duration_cast<milliseconds>(idle_in_transaction_timeout);
  result.connection.keepalives_idle
    = std::chrono::duration_cast<std::chrono::seconds>(keepalives_idle);
  result.connection.keepalives_interval
    = std::chrono::duration_cast<std::chrono::seconds>(keepalives_interval);
  result.connection.keepalives_count = keepalives_count;
  result.connection.send_session_settings = send_session_settings;
  result.max_lost_attempts = max_lost_attempts;
  result.takeover_interval = duration_cast<milliseconds>(takeover_interval);
  result.fallback_poll_interval
    = duration_cast<milliseconds>(fallback_poll_interval);
  result.start_timeout = duration_cast<milliseconds>(start_timeout);
  result.worker_processes = worker_processes;
  result.worker_process_capacity = worker_process_capacity;
  result.max_restarts = max_restarts;
  result.restart_period = duration_cast<milliseconds>(restart_period);
  result.on_database_loss = on_database_loss == "shutdown"
                              ? database_loss_policy::shutdown
                              : database_loss_policy::reconnect;
  if (log_level_name == "debug")
    result.min_log_level = log_level::debug;
  else if (log_level_name == "warning")
    result.min_log_level = log_level::warning;
  else if (log_level_name == "error")
    result.min_log_level = log_level::error;
  result.tasks = std::move(tasks);
  return result;
}

} // namespace cafmq::actors
