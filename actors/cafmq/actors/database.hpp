#pragma once

// The database actor owns one libpqxx connection (one connection per actor,
// never shared across threads) and runs the queue's statements on it. It is
// spawned detached because every call blocks. Messages:
//   (claim_atom, claim_request)              -> claim_result
//   (record_atom, write_batch)               -> true   (one transaction:
//                                               completions, failures and
//                                               released attempts)
//   (renew_atom, vector<attempt_ref>, ms)    -> vector<lease_state>
//   (checkpt_atom, attempt_ref, checkpoint)  -> true, or stale_attempt
//   (prune_atom, retention ms, limit)        -> pruned, or -1 (other node)
//   (expire_atom, limit)                     -> expired reservations
// A lost connection fails the current request with database_unavailable and
// is reopened on the next one.

#include <memory>
#include <string>

#include <caf/fwd.hpp>

namespace cafmq {
class queue_connection;
} // namespace cafmq

namespace cafmq::actors {

/// `conn`, if given, is an open connection to `url` that the actor takes
/// over (the runner's start-up connection); otherwise it connects on first
/// use.
caf::behavior database(caf::event_based_actor* self, std::string url,
                       std::shared_ptr<queue_connection> conn);

} // namespace cafmq::actors
