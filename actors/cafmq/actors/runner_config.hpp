#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <caf/fwd.hpp>

#include "cafmq/registry.hpp"

namespace cafmq::actors {

/// A task whose handler is a CAF actor, spawned for each attempt and
/// monitored: it gets (run_atom, claimed_task) as a request and replies
/// `true` on success or an error; if it throws, crashes or exits before
/// replying, the attempt fails with the exit reason (and is retried per the
/// task's rules) while the runtime carries on.
///
/// When the attempt is cancelled (cancel, timeout, deadline, shutdown) the
/// handler actor gets (cancel_atom, cancel_reason) and should reply soon.
struct actor_task_definition {
  std::string name;
  std::function<caf::actor(caf::actor_system&)> spawn;
  task_options defaults;
  /// Overrides the runner's filter for this task when set.
  failure_filter is_failure = nullptr;

  spawn_builder builder() const {
    return spawn_builder{name, defaults};
  }
};

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
  /// Lease of each attempt; renewed every keep_alive_interval while it runs.
  std::chrono::milliseconds lease = std::chrono::seconds{30};
  std::chrono::milliseconds keep_alive_interval = std::chrono::seconds{10};
  /// Longest sleep between claims when nothing is scheduled sooner.
  std::chrono::milliseconds max_poll_wait = std::chrono::seconds{5};
  /// How long a graceful stop lets running handlers finish.
  std::chrono::milliseconds shutdown_timeout = std::chrono::seconds{30};
  /// Apply migrations at start.
  bool migrate = true;
  /// Run handlers that may block on threads of their own (the pool's
  /// executor). Tests switch this off to run everything on the
  /// deterministic scheduler.
  bool detached_workers = true;
  /// The task definitions this runner claims and runs.
  std::shared_ptr<const registry> tasks;
  /// Tasks whose handlers are actors.
  std::vector<actor_task_definition> actor_tasks;
  /// Which handler errors fail a task at once (see failure_filter); tasks
  /// may override it. Empty: default_is_failure.
  failure_filter is_failure = nullptr;
  /// Finished tasks are kept this long (for status and watch), then pruned
  /// in batches of prune_batch by one runner at a time.
  std::chrono::milliseconds retention = std::chrono::hours{24};
  int prune_batch = 1000;
  /// How often maintenance (pruning, expiring reservations) runs.
  std::chrono::milliseconds maintenance_interval = std::chrono::seconds{60};
  /// At most this many attempts of one (channel name, args) run at once in
  /// this runner; 0: no limit.
  int channel_concurrency = 0;
  /// A channel actor with nothing to do retires after this long.
  std::chrono::milliseconds channel_idle_timeout = std::chrono::seconds{10};

  /// Every task name this runner can run.
  std::vector<std::string> task_names() const;
};

/// Counters of one runner.
struct runner_stats {
  int running = 0;
  /// Channel actors alive.
  int channels = 0;
  long long claimed = 0;
  long long completed = 0;
  long long failed = 0;
  /// Claimed attempts given back unstarted by a graceful stop.
  long long released = 0;
  long long claims = 0;
  /// Cancels that reached running attempts through a lease renewal (their
  /// notification was missed).
  long long cancels_at_renewal = 0;
};

} // namespace cafmq::actors
