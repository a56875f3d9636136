// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// Maintenance: every maintenance_interval it removes expired two-phase
// reservations and prunes finished tasks older than the retention, in
// batches (one runner at a time: the database takes an advisory lock). A
// full batch means more are waiting: it goes on at once. Every
// schedule_interval (unless zero) it fires the due schedules: each tick is
// spawned once across all runners (see cafmq/schedule.hpp). Every second
// (unless vacuum_dead_rows is zero) it vacuums the live table if it has
// that many dead row versions and vacuum can remove some. After a
// transaction held vacuum back for longer than compact_after_hold, it
// compacts the live table once that transaction ends.
// Takes: see maintenance_actor in detail/protocol.hpp.

#include <caf/fwd.hpp>

#include "cafmq/actors/detail/context.hpp"
#include "cafmq/actors/detail/protocol.hpp"

namespace cafmq::actors {

/// Spawns the maintenance actor (see the top of this header); it prunes,
/// expires and fires schedules through `db`, and vacuums and compacts the
/// live table through `upkeep_db`.
maintenance_actor spawn_maintenance(caf::actor_system& sys, context_ptr ctx,
                                    database_actor db,
                                    database_actor upkeep_db);

} // namespace cafmq::actors
