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

class config : public caf::actor_system_config {
public:
  config();

  /// The runner options; the database URL falls back to CAFMQ_DATABASE_URL.
  /// `errc::invalid_argument` for an option with a value it cannot take.
  caf::expected<runner_config>
  runner(std::shared_ptr<const registry> tasks) const;

  std::string database_url;
  std::string listen_url;
  std::string node;
  std::vector<std::string> channels;
  int min_concurrency = 16;
  int max_concurrency = 32;
  int prefetch = 2048;
  caf::timespan prefetch_window = std::chrono::milliseconds{100};
  caf::timespan lease = std::chrono::seconds{30};
  caf::timespan keep_alive_interval = std::chrono::seconds{10};
  caf::timespan max_poll_wait = std::chrono::seconds{5};
  caf::timespan shutdown_timeout = std::chrono::seconds{30};
  bool migrate = true;
  caf::timespan retention = std::chrono::hours{24};
  caf::timespan maintenance_interval = std::chrono::seconds{60};
  int channel_concurrency = 0;
  int prune_batch = 1000;
  caf::timespan channel_idle_timeout = std::chrono::seconds{10};
  caf::timespan request_timeout = std::chrono::seconds{45};
  caf::timespan statement_timeout = std::chrono::seconds{30};
  caf::timespan idle_in_transaction_timeout = std::chrono::seconds{60};
  caf::timespan keepalives_idle = std::chrono::seconds{10};
  caf::timespan keepalives_interval = std::chrono::seconds{5};
  int keepalives_count = 3;
  bool send_session_settings = true;
  caf::timespan handler_grace = std::chrono::seconds{5};
  int max_lost_attempts = 5;
  caf::timespan takeover_interval = std::chrono::milliseconds{500};
  caf::timespan fallback_poll_interval = std::chrono::milliseconds{100};
  int worker_processes = 1;
  int worker_process_capacity = 4;
  int max_restarts = 5;
  caf::timespan restart_period = std::chrono::seconds{60};
  caf::timespan start_timeout = std::chrono::seconds{60};
  std::string on_database_loss = "reconnect";
  std::string log_level_name = "info";
  // cafmq.publish.*: publishing; its TLS files are CAF's openssl.* options
  // (certificate, key, cafile, passphrase), read by the openssl module.
  std::string node_host = "127.0.0.1";
  int node_port = -1;
  std::string node_secret;
};

} // namespace cafmq::actors
