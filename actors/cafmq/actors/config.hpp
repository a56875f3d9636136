// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// Runtime options in CAF's config conventions: group "cafmq" in an INI file
// (config/cafmq.ini) and on the command line (--cafmq.max-concurrency=64);
// publishing to other nodes in group "cafmq.publish" (see node.hpp). A
// program that publishes loads caf::io::middleman (and with TLS
// caf::openssl::manager) itself, e.g. CAF_MAIN(caf::io::middleman).

#include <string>
#include <vector>

#include <caf/actor_system_config.hpp>
#include <caf/expected.hpp>
#include <caf/timespan.hpp>

#include "cafmq/actors/runner_config.hpp"

namespace cafmq::actors {

/// The actor system config of a runner program: CAF's options plus cafmq's
/// (see the top of this header). Each member is bound to the option named
/// below and means what the `runner_config` member of its name does;
/// `runner()` copies them over.
class config : public caf::actor_system_config {
public:
  /// Declares the options and registers the runtime's message types.
  config();

  /// The defaults of every option: those of `runner_config` (and of its
  /// `connection_options`), the one place they are written down.
  static const runner_config& defaults();

  using caf::actor_system_config::parse;

  /// Reads the config file and then the command line (which wins): the file
  /// is `ini_file`, or default_config_file() when null, or --config-file.
  /// With -h, -? or --help it prints help_text() to stdout, sets
  /// `cli_helptext_printed` and reads nothing.
  caf::error parse(int argc, char** argv, const char* ini_file = nullptr);

  /// What --help prints: CAF's global options and cafmq's, each with its
  /// default.
  std::string help_text(const std::string& program) const;

  /// The config file read when a program names none: $CAFMQ_CONFIG; else
  /// cafmq.ini next to the program (the build tree's examples) or in
  /// ../share/cafmq/ (an installed tree); else cafmq.ini in the working
  /// directory (CAF ignores a missing file).
  static std::string default_config_file();

  /// The runner options; the database URL falls back to CAFMQ_DATABASE_URL.
  /// `errc::invalid_argument` for an option with a value it cannot take.
  caf::expected<runner_config>
  runner(std::shared_ptr<const registry> tasks) const;

  /// cafmq.database-url; empty: the environment variable CAFMQ_DATABASE_URL.
  std::string database_url;
  /// cafmq.listen-url; empty: the database URL.
  std::string listen_url;
  /// cafmq.node; empty: host:pid.
  std::string node;
  /// cafmq.channels; empty: all channels.
  std::vector<std::string> channels;
  /// cafmq.min-concurrency.
  int min_concurrency = defaults().min_concurrency;
  /// cafmq.max-concurrency.
  int max_concurrency = defaults().max_concurrency;
  /// cafmq.prefetch.
  int prefetch = defaults().prefetch;
  /// cafmq.prefetch-window.
  caf::timespan prefetch_window = defaults().prefetch_window;
  /// cafmq.direct-dispatch.
  bool direct_dispatch = defaults().direct_dispatch;
  /// cafmq.lease.
  caf::timespan lease = defaults().lease;
  /// cafmq.keep-alive-interval.
  caf::timespan keep_alive_interval = defaults().keep_alive_interval;
  /// cafmq.max-poll-wait.
  caf::timespan max_poll_wait = defaults().max_poll_wait;
  /// cafmq.shutdown-timeout.
  caf::timespan shutdown_timeout = defaults().shutdown_timeout;
  /// cafmq.migrate.
  bool migrate = defaults().migrate;
  /// cafmq.retention.
  caf::timespan retention = defaults().retention;
  /// cafmq.maintenance-interval.
  caf::timespan maintenance_interval = defaults().maintenance_interval;
  /// cafmq.compact-after-hold.
  caf::timespan compact_after_hold = defaults().compact_after_hold;
  /// cafmq.vacuum-dead-rows.
  int vacuum_dead_rows = defaults().vacuum_dead_rows;
  /// cafmq.schedule-interval.
  caf::timespan schedule_interval = defaults().schedule_interval;
  /// cafmq.channel-concurrency.
  int channel_concurrency = defaults().channel_concurrency;
  /// cafmq.prune-batch.
  int prune_batch = defaults().prune_batch;
  /// cafmq.channel-idle-timeout.
  caf::timespan channel_idle_timeout = defaults().channel_idle_timeout;
  /// cafmq.request-timeout.
  caf::timespan request_timeout = defaults().request_timeout;
  /// cafmq.statement-timeout: `connection_options::statement_timeout`; 0: none.
  caf::timespan statement_timeout
    = defaults().connection.statement_timeout.value_or(
      std::chrono::milliseconds{0});
  /// cafmq.idle-in-transaction-timeout:
  /// `connection_options::idle_in_transaction_session_timeout`; 0: none.
  caf::timespan idle_in_transaction_timeout
    = defaults().connection.idle_in_transaction_session_timeout.value_or(
      std::chrono::milliseconds{0});
  /// cafmq.keepalives-idle: `connection_options::keepalives_idle`, in whole
  /// seconds.
  caf::timespan keepalives_idle = defaults().connection.keepalives_idle;
  /// cafmq.keepalives-interval: `connection_options::keepalives_interval`, in
  /// whole seconds.
  caf::timespan keepalives_interval = defaults().connection.keepalives_interval;
  /// cafmq.keepalives-count: `connection_options::keepalives_count`.
  int keepalives_count = defaults().connection.keepalives_count;
  /// cafmq.keepalives: `connection_options::keepalives`.
  bool keepalives = defaults().connection.keepalives;
  /// cafmq.tcp-user-timeout: `connection_options::tcp_user_timeout`.
  caf::timespan tcp_user_timeout = defaults().connection.tcp_user_timeout;
  /// cafmq.connect-timeout: `connection_options::connect_timeout`.
  caf::timespan connect_timeout = defaults().connection.connect_timeout;
  /// cafmq.application-name: `connection_options::application_name`.
  std::string application_name = defaults().connection.application_name;
  /// cafmq.worker-command; empty: this program with its arguments.
  std::vector<std::string> worker_command = defaults().worker_command;
  /// cafmq.send-session-settings: `connection_options::send_session_settings`.
  bool send_session_settings = defaults().connection.send_session_settings;
  /// cafmq.prepare-statements: `connection_options::prepare_statements`.
  bool prepare_statements = defaults().connection.prepare_statements;
  /// cafmq.handler-grace.
  caf::timespan handler_grace = defaults().handler_grace;
  /// cafmq.max-lost-attempts.
  int max_lost_attempts = defaults().max_lost_attempts;
  /// cafmq.takeover-interval.
  caf::timespan takeover_interval = defaults().takeover_interval;
  /// cafmq.fallback-poll-interval.
  caf::timespan fallback_poll_interval = defaults().fallback_poll_interval;
  /// cafmq.max-watches.
  int max_watches = defaults().max_watches;
  /// cafmq.worker-processes.
  int worker_processes = defaults().worker_processes;
  /// cafmq.worker-process-capacity.
  int worker_process_capacity = defaults().worker_process_capacity;
  /// cafmq.max-restarts.
  int max_restarts = defaults().max_restarts;
  /// cafmq.restart-period.
  caf::timespan restart_period = defaults().restart_period;
  /// cafmq.start-timeout.
  caf::timespan start_timeout = defaults().start_timeout;
  /// cafmq.on-database-loss: "reconnect" or "shutdown".
  std::string on_database_loss = to_string(defaults().on_database_loss);
  /// cafmq.log-level: "debug", "info", "warning" or "error";
  /// `runner_config::min_log_level`.
  std::string log_level_name = to_string(defaults().min_log_level);
  /// cafmq.dashboard-listen; empty: no dashboard.
  std::string dashboard_listen = defaults().dashboard_listen;
  /// cafmq.dashboard-token; empty: none.
  std::string dashboard_token = defaults().dashboard_token;
  /// cafmq.dashboard-read-only.
  bool dashboard_read_only = defaults().dashboard_read_only;
  /// cafmq.metrics-listen; empty: no metrics.
  std::string metrics_listen = defaults().metrics_listen;
  /// cafmq.metrics-queue-interval.
  caf::timespan metrics_queue_interval = defaults().metrics_queue_interval;
  // cafmq.publish.*: publishing; its TLS files are CAF's openssl.* options
  // (certificate, key, cafile, passphrase), read by the openssl module.
  /// cafmq.publish.host: `node_options::host`.
  std::string node_host = defaults().publish.host;
  /// cafmq.publish.port: -1: not published; 0: any free port.
  int node_port = defaults().publish.port ? int{*defaults().publish.port} : -1;
  /// cafmq.publish.secret: `node_options::secret`.
  std::string node_secret;
};

} // namespace cafmq::actors
