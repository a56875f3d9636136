// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// What every actor of one runtime reads and never changes: the options, the
// log, and the task definitions by name. Shared by pointer, so that 10,000
// channel actors do not copy the options.

#include <memory>
#include <string>
#include <unordered_map>

#include "cafmq/actors/detail/event_bus.hpp"
#include "cafmq/actors/detail/runtime_metrics.hpp"
#include "cafmq/actors/log.hpp"
#include "cafmq/actors/runner_config.hpp"

namespace cafmq::actors {

class started_attempts;

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
  /// Event subscribers (see event_hub.hpp); the one mutable part.
  std::shared_ptr<event_bus> events = std::make_shared<event_bus>();
  /// The attempts whose handlers started here (or on a joined worker), which
  /// the listener records for takeover (started_attempts.hpp).
  std::shared_ptr<started_attempts> started;
  /// This runtime's counters (runner_stats reads them), served when
  /// cfg.metrics_listen is set.
  std::shared_ptr<runtime_metrics> metrics;

  /// The failure filter of a task: its own, or the runner's.
  failure_filter filter_of(const std::string& name) const;

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
