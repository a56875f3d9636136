// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// What every actor of one runtime reads and never changes: the options, the
// log, the task definitions by name, and the metrics (whose counters are
// atomic adds, read by runner_stats and the endpoint). Shared by pointer to
// const, so that 10,000 channel actors do not copy the options. Nothing in
// it is the actors' state: where events go is told to each emitter by
// message (event_hub.hpp), and the set of started attempts, which executor
// threads add to, is given to the pool, the router and the session alone.

#include <memory>
#include <string>
#include <unordered_map>

#include "cafmq/actors/detail/runtime_metrics.hpp"
#include "cafmq/actors/log.hpp"
#include "cafmq/actors/runner_config.hpp"

namespace cafmq::actors {

/// What every actor of one runtime reads (see the top of this header).
struct runtime_context {
  /// Keeps `x`, makes the logger from its log options and indexes its actor
  /// tasks by name; counts in `metrics` (its own if null).
  explicit runtime_context(runner_config x,
                           std::shared_ptr<runtime_metrics> metrics = nullptr);

  /// The runner's options, after `spawn_runner` checked them.
  runner_config cfg;
  /// The runtime's log.
  logger log;
  /// The actor tasks of `cfg`, by name.
  std::unordered_map<std::string, const actor_task_definition*> actor_tasks;
  /// This runtime's counters (runner_stats reads them), served when
  /// cfg.metrics_listen is set.
  std::shared_ptr<runtime_metrics> metrics;

  /// The failure filter of a task: its own, or the runner's (a part of
  /// `cfg`, which lives as long as this context).
  const failure_filter& filter_of(const std::string& name) const;

  /// The definition of an actor task, or nullptr.
  const actor_task_definition* actor_task(const std::string& name) const;

  /// True if a handler of `name` (a function or an actor task) runs in this
  /// process: the pool runs its attempts, else the router places them on
  /// joined workers.
  bool runs_here(const std::string& name) const;

  /// How long a request between the runtime's actors may take.
  caf::timespan request_timeout() const;
};

/// How the actors share the context: by pointer, read-only.
using context_ptr = std::shared_ptr<const runtime_context>;

} // namespace cafmq::actors
