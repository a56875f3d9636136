// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// The completer writes the outcomes of attempts (completions, failures,
// attempts given back) through a database actor with group commit: while
// one write is in flight, new outcomes collect; the next write takes them
// all. No added delay at low load, large batches under load. Once a batch
// is in the database it tells each owner (the channel actor that sent the
// outcomes) which of its attempts are written, and how the database took
// each (written_as). A failed write is retried with backoff; nothing is
// dropped.
// Takes: see completer_actor in detail/protocol.hpp. Sends (written_atom,
// written attempts) to owners.

#include <caf/fwd.hpp>

#include "cafmq/actors/detail/context.hpp"
#include "cafmq/actors/detail/protocol.hpp"

namespace cafmq::actors {

/// Spawns the completer (see the top of this header); it writes through `db`.
completer_actor spawn_completer(caf::actor_system& sys, context_ptr ctx,
                                database_actor db);

} // namespace cafmq::actors
