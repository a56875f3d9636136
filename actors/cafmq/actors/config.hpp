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
  int min_concurrency = 16;
  /// cafmq.max-concurrency.
  int max_concurrency = 32;
  /// cafmq.prefetch.
  int prefetch = 2048;
  /// cafmq.prefetch-window.
  caf::timespan prefetch_window = std::chrono::milliseconds{100};
  /// cafmq.lease.
  caf::timespan lease = std::chrono::seconds{30};
  /// cafmq.keep-alive-interval.
  caf::timespan keep_alive_interval = std::chrono::seconds{10};
  /// cafmq.max-poll-wait.
  caf::timespan max_poll_wait = std::chrono::seconds{5};
  /// cafmq.shutdown-timeout.
  caf::timespan shutdown_timeout = std::chrono::seconds{30};
  /// cafmq.migrate.
  bool migrate = true;
  /// cafmq.retention.
  caf::timespan retention = std::chrono::hours{24};
  /// cafmq.maintenance-interval.
  caf::timespan maintenance_interval = std::chrono::seconds{60};
  /// cafmq.channel-concurrency.
  int channel_concurrency = 0;
  /// cafmq.prune-batch.
  int prune_batch = 1000;
  /// cafmq.channel-idle-timeout.
  caf::timespan channel_idle_timeout = std::chrono::seconds{10};
  /// cafmq.request-timeout.
  caf::timespan request_timeout = std::chrono::seconds{45};
  /// cafmq.statement-timeout: `connection_options::statement_timeout`; 0: none.
  caf::timespan statement_timeout = std::chrono::seconds{30};
  /// cafmq.idle-in-transaction-timeout:
  /// `connection_options::idle_in_transaction_session_timeout`; 0: none.
  caf::timespan idle_in_transaction_timeout = std::chrono::seconds{60};
  /// cafmq.keepalives-idle: `connection_options::keepalives_idle`, in whole
  /// seconds.
  caf::timespan keepalives_idle = std::chrono::seconds{10};
  /// cafmq.keepalives-interval: `connection_options::keepalives_interval`, in
  /// whole seconds.
  caf::timespan keepalives_interval = std::chrono::seconds{5};
  /// cafmq.keepalives-count: `connection_options::keepalives_count`.
  int keepalives_count = 3;
  /// cafmq.send-session-settings: `connection_options::send_session_settings`.
  bool send_session_settings = true;
  /// cafmq.handler-grace.
  caf::timespan handler_grace = std::chrono::seconds{5};
  /// cafmq.max-lost-attempts.
  int max_lost_attempts = 5;
  /// cafmq.takeover-interval.
  caf::timespan takeover_interval = std::chrono::milliseconds{500};
  /// cafmq.fallback-poll-interval.
  caf::timespan fallback_poll_interval = std::chrono::milliseconds{100};
  /// cafmq.worker-processes.
  int worker_processes = 1;
  /// cafmq.worker-process-capacity.
  int worker_process_capacity = 4;
  /// cafmq.max-restarts.
  int max_restarts = 5;
  /// cafmq.restart-period.
  caf::timespan restart_period = std::chrono::seconds{60};
  /// cafmq.start-timeout.
  caf::timespan start_timeout = std::chrono::seconds{60};
  /// cafmq.on-database-loss: "reconnect" or "shutdown".
  std::string on_database_loss = "reconnect";
  /// cafmq.log-level: "debug", "info", "warning" or "error";
  /// `runner_config::min_log_level`.
  std::string log_level_name = "info";
  // cafmq.publish.*: publishing; its TLS files are CAF's openssl.* options
  // (certificate, key, cafile, passphrase), read by the openssl module.
  /// cafmq.publish.host: `node_options::host`.
  std::string node_host = "127.0.0.1";
  /// cafmq.publish.port: -1: not published; 0: any free port.
  int node_port = -1;
  /// cafmq.publish.secret: `node_options::secret`.
  std::string node_secret;
};

} // namespace cafmq::actors
