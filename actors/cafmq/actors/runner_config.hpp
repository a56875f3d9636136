#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "cafmq/registry.hpp"

namespace cafmq::actors {

/// Everything one runtime instance needs; read from config/cafmq.ini and the
/// command line by `load_config`, or filled in by the embedding program.
struct runner_config {
  /// PostgreSQL URL (libpq URI or key=value string).
  std::string database_url;
  /// This runner's name in task rows; defaults to host:pid.
  std::string node;
  /// Channel names to serve (all args of each); empty: all channels.
  std::vector<std::string> channels;
  /// Claim when fewer than this many tasks run...
  int min_concurrency = 16;
  /// ...and then up to this many in total.
  int max_concurrency = 32;
  /// Lease of each attempt; renewed every keep_alive_interval while it runs.
  std::chrono::milliseconds lease = std::chrono::seconds{30};
  std::chrono::milliseconds keep_alive_interval = std::chrono::seconds{10};
  /// Longest sleep between claims when nothing is scheduled sooner.
  std::chrono::milliseconds max_poll_wait = std::chrono::seconds{5};
  /// How long a graceful stop lets running handlers finish.
  std::chrono::milliseconds shutdown_timeout = std::chrono::seconds{30};
  /// Apply migrations at start.
  bool migrate = true;
  /// Run function handlers on their own threads (detached workers). Tests
  /// switch this off to run everything on the deterministic scheduler.
  bool detached_workers = true;
  /// The task definitions this runner claims and runs.
  std::shared_ptr<const registry> tasks;
};

/// Counters of one runner.
struct runner_stats {
  int running = 0;
  long long claimed = 0;
  long long completed = 0;
  long long failed = 0;
  long long claims = 0;
};

} // namespace cafmq::actors
