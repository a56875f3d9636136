// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// The runner's side of process isolation (cafmq/actors/isolation.hpp).
// Internal.

#include <cstdint>
#include <memory>
#include <string>

#include <caf/expected.hpp>
#include <caf/fwd.hpp>

#include "cafmq/actors/runner_config.hpp"

namespace cafmq::actors {

/// The definitions marked `isolated` in cfg.tasks and cfg.remote_tasks.
std::shared_ptr<registry> isolated_tasks(const runner_config& cfg);

/// Moves the definitions marked `isolated` out of cfg.tasks into
/// cfg.remote_tasks: the runner claims them only while a worker process
/// offers them, and never runs them itself. Idempotent.
void split_isolated(runner_config& cfg);

/// Starts cfg.worker_processes worker processes that join `runtime`
/// through the gate on loopback `port`, proving `secret`. An actor
/// supervises them: each is reaped by a thread of its own, its end is told
/// to the runtime (exited_atom: pid and wait status), and it is started
/// again with a backoff unless it exited with status 0 (its runner let it
/// go). Once the runtime ended, the actor kills what is left after
/// `stop_bound`, and quits when every process was reaped.
void start_worker_processes(caf::actor_system& sys,
                            const runtime_actor& runtime,
                            const runner_config& cfg, std::uint16_t port,
                            const std::string& secret);

} // namespace cafmq::actors
