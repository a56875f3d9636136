// SPDX-License-Identifier: BSD-3-Clause
#pragma once

#include <algorithm>
#include <cstddef>
#include <thread>

#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>

namespace cafmq::actors {

/// How many scheduler threads an actor system cafmq starts (a runner's, a
/// worker node's) runs: 2, or a quarter of the cores on machines with more
/// than 8. cafmq's actors only route messages (about 10 us of CPU per task
/// in a drain); handlers that may block run on the executor's threads and
/// the database actors on their own. Each further thread is one more to
/// wake: every hop of a task's path (the handler's outcome to the pool, the
/// channel, the dispatcher) went to another sleeping thread. CAF's default
/// (at least 4) cost complete(tx) 172 us of runner CPU per task against
/// 143-150 us with 2 threads and 131 us with 1, at the same throughput
/// (2 cores, 2026-12-05).
inline std::size_t scheduler_threads() {
  return std::max<std::size_t>(2, std::thread::hardware_concurrency() / 4);
}

/// Sets the scheduler of an actor system cafmq starts to work sharing with
/// `scheduler_threads()` threads. Work sharing wakes an idle thread with a
/// condition variable. CAF's default, work stealing, polls: an idle thread
/// sleeps up to 10 ms between polls, which each hop of a task's pickup (or
/// of a worker's batch) would pay, and its 50 us polling naps cost CPU that
/// PostgreSQL needs under load.
inline void configure_scheduler(caf::actor_system_config& cfg) {
  cfg.set("scheduler.policy", caf::atom("sharing"));
  cfg.set("scheduler.max-threads", scheduler_threads());
}

} // namespace cafmq::actors
