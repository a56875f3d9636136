#pragma once

// Starting a runtime: embedded in a CAF application's own actor_system
// (spawn_runner), or from a plain program through the blocking facade
// (runner), which owns an actor system of its own.

#include <memory>

#include <caf/expected.hpp>
#include <caf/fwd.hpp>

#include "cafmq/actors/runner_config.hpp"

namespace cafmq::actors {

/// Fills in defaults (node name), checks `cfg`, migrates when cfg.migrate,
/// and spawns the runtime in `sys`. The returned actor is the dispatcher:
/// send it (stop_atom) for a graceful stop, (stats_atom) for counters.
caf::expected<caf::actor> spawn_runner(caf::actor_system& sys,
                                       runner_config cfg);

/// A runtime for programs that are not CAF applications. It runs until
/// `stop()` or until the handle goes away.
class runner {
public:
  ~runner();

  /// Starts a runtime with an actor system of its own.
  static caf::expected<std::unique_ptr<runner>> start(runner_config cfg);

  /// Stops gracefully: no new claims, running handlers get up to the
  /// shutdown timeout, every outcome is written. Idempotent.
  void stop();

  runner_stats stats();

private:
  struct impl;

  explicit runner(std::unique_ptr<impl> ptr);

  std::unique_ptr<impl> impl_;
};

} // namespace cafmq::actors
