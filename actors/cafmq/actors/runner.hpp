// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// Starting a runtime: embedded in a CAF application's own actor_system
// (spawn_runner, which returns the typed runtime actor), or from a plain
// program through the blocking facade (runner), which owns an actor system
// of its own.

#include <cstdint>
#include <memory>
#include <optional>

#include <caf/expected.hpp>
#include <caf/fwd.hpp>

#include "cafmq/actors/runner_config.hpp"

/// The actor runtime on CAF 0.17 that claims and runs the tasks: start one
/// with `spawn_runner` or `runner`; protocol.hpp lists its interfaces.
namespace cafmq::actors {

/// Fills in defaults (node name), checks `cfg`, migrates when cfg.migrate
/// (else checks that the schema is this binary's), and spawns the runtime
/// in `sys`. The returned actor is the runtime's public face: (stop_atom)
/// for a graceful stop, (stats_atom), (cancel_atom, id), (status_atom, id),
/// (watch_atom, id, watcher), (pause_atom, name) (answered once no claim
/// made before it is in flight), (resume_atom, name),
/// (spawn_atom, request), (subscribe_atom, filter, subscriber). With
/// cfg.publish enabled it also publishes the runtime to other nodes (see
/// node.hpp): the system must have the middleman loaded (enable_nodes).
/// The system's config should have had `add_message_types` called on it
/// (`cafmq::actors::config` does).
caf::expected<runtime_actor> spawn_runner(caf::actor_system& sys,
                                          runner_config cfg);

/// A runtime for programs that are not CAF applications. It runs until
/// `stop()` or until the handle goes away.
class runner {
public:
  ~runner();

  /// Starts a runtime with an actor system of its own.
  static caf::expected<std::unique_ptr<runner>> start(runner_config cfg);

  /// Stops gracefully: no new claims, running handlers get up to the
  /// shutdown timeout (then their cancel fires, and handler actors get
  /// handler_grace more), every outcome reported is written. Returns
  /// within shutdown_timeout + handler_grace + 2 × request_timeout.
  /// Idempotent.
  void stop();

  /// Counters. Once a graceful stop ended (stop(), or a stop from a remote
  /// node that wait() saw), the final ones, with every outcome the stop
  /// wrote; after a stop that did not end gracefully, the last ones read.
  runner_stats stats();

  /// The runtime actor, for the typed interface.
  runtime_actor handle() const;

  /// The port the control interface is published on (cfg.publish), if it
  /// is.
  std::optional<std::uint16_t> node_port() const;

  /// Blocks until the runtime ends: a stop from a remote node, or the
  /// restart intensity exceeded. stop() and stats() return at once after.
  void wait();

  /// Blocks until SIGINT or SIGTERM arrives, then stops gracefully (as
  /// stop()), and returns the signal's number; returns 0 without a signal
  /// when the runtime ends first (as wait()). While it waits, both signals
  /// go to a handler that only writes to a pipe, and they are unblocked in
  /// the calling thread (a program that blocks them in every thread before
  /// starting the runner gets them here, even one sent before this call);
  /// the previous handlers and signal mask are back before the stop
  /// begins, so a second signal during the stop gets the program's own
  /// handling (by default, it ends the process). One call at a time per
  /// process: a second concurrent one is an error.
  caf::expected<int> wait_for_signal();

private:
  struct impl;

  explicit runner(std::unique_ptr<impl> ptr);

  std::unique_ptr<impl> impl_;
};

} // namespace cafmq::actors
