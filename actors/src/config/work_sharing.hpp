// SPDX-License-Identifier: BSD-3-Clause
#pragma once

#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>

namespace cafmq::actors {

/// Sets the scheduler of an actor system cafmq starts (a runner's, a
/// worker node's) to work sharing, which wakes an idle thread with a
/// condition variable. CAF's default, work stealing, polls: an idle thread
/// sleeps up to 10 ms between polls, which each hop of a task's pickup (or
/// of a worker's batch) would pay, and its 50 us polling naps cost CPU that
/// PostgreSQL needs under load.
inline void use_work_sharing(caf::actor_system_config& cfg) {
  cfg.set("scheduler.policy", caf::atom("sharing"));
}

} // namespace cafmq::actors
