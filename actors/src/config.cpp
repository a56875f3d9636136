#include "cafmq/actors/config.hpp"

#include <cstdlib>

namespace cafmq::actors {

config::config() {
  opt_group{custom_options_, "cafmq"}
    .add(database_url, "database-url",
         "PostgreSQL URL (default: CAFMQ_DATABASE_URL)")
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
         "at most this many running per channel (0: no limit)");
}

runner_config config::runner(std::shared_ptr<const registry> tasks) const {
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  runner_config result;
  result.database_url = database_url;
  if (result.database_url.empty())
    if (auto env = std::getenv("CAFMQ_DATABASE_URL"))
      result.database_url = env;
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
  result.tasks = std::move(tasks);
  return result;
}

} // namespace cafmq::actors
