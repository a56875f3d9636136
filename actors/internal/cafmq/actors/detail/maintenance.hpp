// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// Maintenance: every maintenance_interval it removes expired two-phase
// reservations and prunes finished tasks older than the retention, in
// batches (one runner at a time: the database takes an advisory lock). A
// full batch means more are waiting: it goes on at once. Every
// schedule_interval (unless zero) it fires the due schedules: each tick is
// spawned once across all runners (see cafmq/schedule.hpp).
// Takes: see maintenance_actor in detail/protocol.hpp.

#include <caf/fwd.hpp>

#include "cafmq/actors/detail/context.hpp"
#include "cafmq/actors/detail/protocol.hpp"

namespace cafmq::actors {

/// Spawns the maintenance actor (see the top of this header); it writes through
/// `db`.
maintenance_actor spawn_maintenance(caf::actor_system& sys, context_ptr ctx,
                                    database_actor db);

} // namespace cafmq::actors
