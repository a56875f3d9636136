// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// The worker node's actor on an executor of the caller's: deterministic
// tests run its jobs on the test's thread (an executor without threads).
// Internal.

#include <memory>

#include "cafmq/actors/worker.hpp"

namespace cafmq::actors {

class executor;

/// Like spawn_worker, with attempts running on `exec`.
worker_actor spawn_worker(caf::actor_system& sys, node_actor node,
                          worker_config cfg, std::shared_ptr<executor> exec);

} // namespace cafmq::actors
