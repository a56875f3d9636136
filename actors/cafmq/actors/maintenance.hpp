#pragma once

// The maintenance actor keeps the tables small: every interval it removes
// expired two-phase reservations and prunes tasks that finished longer ago
// than the retention, in batches (a full batch is followed by the next at
// once). Pruning runs on one node at a time (an advisory lock in SQL); the
// others skip. Messages:
//   (tick_atom)   timer: do a round

#include <chrono>

#include <caf/fwd.hpp>

namespace cafmq::actors {

caf::actor spawn_maintenance(caf::actor_system& sys, caf::actor db,
                             std::chrono::milliseconds interval,
                             std::chrono::milliseconds retention, int batch);

} // namespace cafmq::actors
