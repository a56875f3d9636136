// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// The runner's side of one joined worker (a remote worker node, or a local
// worker process). Spawned by the router on join, it holds the attempts
// the router placed on its worker: it forwards them in one message per batch,
// forwards their cancels, and accepts the worker's outcomes, checkpoints
// and keep-alives only for attempts it holds (fencing by id and attempt: a
// late answer about an attempt it no longer holds changes nothing).
// Checkpoints and keep-alives go to the write database. It monitors the
// worker actor: when the worker goes down (its node died, the connection
// dropped or timed out) or its process exits, every attempt it held fails
// at once, retryably, with the reason, and the port quits. A stop lets the
// held attempts end, then tells the worker to leave. Either way the worker
// hears `stop` when the port ends.
// Takes and sends: see worker_port_actor in detail/protocol.hpp.

#include <caf/fwd.hpp>

#include "cafmq/actors/detail/context.hpp"
#include "cafmq/actors/detail/protocol.hpp"

namespace cafmq::actors {

/// Spawns the port of `worker`, which joined with `offer`; outcomes go to
/// `router`, checkpoints and keep-alives to `db`.
worker_port_actor spawn_worker_port(caf::actor_system& sys, context_ptr ctx,
                                    worker_offer offer, worker_actor worker,
                                    router_actor router, database_actor db);

/// What a wait status (from waitpid) means, for the attempts' last error.
std::string describe_wait_status(std::int32_t status);

} // namespace cafmq::actors
