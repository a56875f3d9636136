// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// A worker node: a process that runs the handlers of a registry for a
// runner node, which owns the queue's database. The worker actor joins the
// runner's node actor with (join_atom, worker_offer, itself) and gets a port
// (see worker_port.hpp); it runs the attempts the port sends on executor
// threads (at most `capacity` at once), fires their tokens on cancel, and
// reports outcomes to the port in batches. A handler's checkpoint and
// keep_alive go to the port, which writes them if the attempt is still current;
// `complete(tx)` and `checkpoint(tx, cp)` in the handler's own transaction
// work when the worker is given the database's URL (a completion is then
// reported as written), and fail with a clear error without it. When the
// runner node
// is lost, running handlers are cancelled, their outcomes dropped (the
// runner fails those attempts itself), and the worker actor quits with the
// reason. Takes: see worker_actor in protocol.hpp. A program that is not a
// CAF application runs one through the blocking facade (worker_node).

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <caf/expected.hpp>
#include <caf/fwd.hpp>

#include "cafmq/actors/log.hpp"
#include "cafmq/actors/node_options.hpp"
#include "cafmq/actors/protocol.hpp"
#include "cafmq/registry.hpp"

namespace cafmq::actors {

/// What a worker node runs and how (see the top of this header).
struct worker_config {
  /// The worker's name in the runner's logs and errors; host:pid when empty.
  std::string node;
  /// The handlers this worker runs; their names are what it offers.
  std::shared_ptr<const registry> tasks;
  /// At most this many attempts at once (one thread each).
  int capacity = 8;
  /// Joining, and each checkpoint or keep-alive, gives up after this long.
  std::chrono::milliseconds request_timeout = std::chrono::seconds{10};
  /// Which handler errors fail a task at once; tasks may override it.
  failure_filter is_failure = nullptr;
  /// The queue's database, when this process can reach it: handlers may
  /// then complete(tx) and checkpoint(tx) in their own transactions, on
  /// their own connections to it, fenced as on the runner (an attempt that
  /// is no longer current writes nothing). The worker opens no connection.
  /// Empty: those calls fail with a clear error (return success, or call
  /// complete() and checkpoint(cp), which go through the runner). A worker
  /// process of the runner (process isolation) gets the runner's.
  std::string database_url;
  /// Set when the runner started this process (process isolation).
  std::int64_t pid = 0;
  /// Where log records go; empty: stderr.
  log_sink log = nullptr;
  /// Records below this level are dropped.
  log_level min_log_level = log_level::info;
  /// Called once, on the worker actor, when the join ends: none when the
  /// runner accepted it, else why not (refused, no answer). Must not block.
  std::function<void(const caf::error&)> on_join = nullptr;
};

/// Checks `cfg` and fills in defaults; an error says what is wrong.
caf::error check(worker_config& cfg);

/// Spawns a worker that joins `node` and runs attempts until the runner
/// tells it to stop or is lost. The system's config should have had
/// `add_message_types` called on it. `cfg` must have passed `check`.
worker_actor spawn_worker(caf::actor_system& sys, node_actor node,
                          worker_config cfg);

/// A worker node for programs that are not CAF applications: an actor
/// system of its own (the middleman with the node heartbeat, see
/// enable_nodes), connected to the runner node at `where`.
class worker_node {
public:
  ~worker_node();

  /// Checks `cfg`, connects (connect_node) and spawns the worker, which
  /// joins the runner. With `where.tls`, `tls` names this node's
  /// certificate, key and CA.
  static caf::expected<std::unique_ptr<worker_node>>
  start(worker_config cfg, const node_endpoint& where,
        const tls_options& tls = {});

  /// Blocks until the runner accepted the join (none), refused it (why), or
  /// `timeout` passed (errc::node_unreachable, naming the timeout).
  caf::error wait_joined(std::chrono::milliseconds timeout);

  /// Blocks until the worker ends: none when its runner let it go, else
  /// why (the join was refused, the runner node was lost).
  caf::error wait();

  /// Leaves the runner: attempts that have not started are given back,
  /// running handlers are cancelled and reported. Idempotent.
  void stop();

  /// The worker actor.
  worker_actor handle() const;

private:
  struct impl;

  explicit worker_node(std::unique_ptr<impl> ptr);

  std::unique_ptr<impl> impl_;
};

} // namespace cafmq::actors
