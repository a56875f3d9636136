#pragma once

// The completer batches the outcomes of attempts (completions and failures)
// and writes them through a database actor with group commit: while one
// write is in flight, new outcomes collect; the next write takes them all.
// No added delay at low load, large batches under load. A failed write is
// retried with backoff; nothing is dropped. After writing failures it sends
// (rescan_atom) to `dispatcher`, whose next claim then learns when the
// retries are due.
// Messages:
//   (done_atom, std::vector<task_outcome>)  queue outcomes
//   (flush_atom)                -> true once everything queued is written

#include <caf/fwd.hpp>

namespace cafmq::actors {

caf::actor spawn_completer(caf::actor_system& sys, caf::actor db,
                           caf::actor dispatcher);

} // namespace cafmq::actors
