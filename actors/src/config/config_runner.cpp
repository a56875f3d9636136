// SPDX-License-Identifier: BSD-3-Clause
// config::runner: the options, as read from the command line and the INI
// file, checked and turned into a runner_config.
#include "cafmq/actors/config.hpp"

#include <cstdlib>

#include <caf/settings.hpp>

#include "cafmq/error.hpp"

namespace cafmq::actors {

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
  result.direct_dispatch = direct_dispatch;
  result.lease = duration_cast<milliseconds>(lease);
  result.keep_alive_interval = duration_cast<milliseconds>(keep_alive_interval);
  result.max_poll_wait = duration_cast<milliseconds>(max_poll_wait);
  result.shutdown_timeout = duration_cast<milliseconds>(shutdown_timeout);
  result.migrate = migrate;
  result.retention = duration_cast<milliseconds>(retention);
  result.maintenance_interval
    = duration_cast<milliseconds>(maintenance_interval);
  result.compact_after_hold = duration_cast<milliseconds>(compact_after_hold);
  result.vacuum_dead_rows = vacuum_dead_rows;
  result.schedule_interval = duration_cast<milliseconds>(schedule_interval);
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
  result.connection.prepare_statements = prepare_statements;
  result.connection.keepalives = keepalives;
  result.connection.tcp_user_timeout
    = duration_cast<milliseconds>(tcp_user_timeout);
  result.connection.connect_timeout
    = std::chrono::duration_cast<std::chrono::seconds>(connect_timeout);
  result.connection.application_name = application_name;
  result.worker_command = worker_command;
  result.max_lost_attempts = max_lost_attempts;
  result.takeover_interval = duration_cast<milliseconds>(takeover_interval);
  result.fallback_poll_interval
    = duration_cast<milliseconds>(fallback_poll_interval);
  result.start_timeout = duration_cast<milliseconds>(start_timeout);
  result.max_watches = max_watches;
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
  result.dashboard_listen = dashboard_listen;
  result.dashboard_token = dashboard_token;
  result.dashboard_read_only = dashboard_read_only;
  result.metrics_listen = metrics_listen;
  result.metrics_queue_interval
    = duration_cast<milliseconds>(metrics_queue_interval);
  result.tasks = std::move(tasks);
  return result;
}

} // namespace cafmq::actors
