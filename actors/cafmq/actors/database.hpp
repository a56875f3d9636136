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

#include <string>

#include <caf/fwd.hpp>

namespace cafmq::actors {

caf::behavior database(caf::event_based_actor* self, std::string url);

} // namespace cafmq::actors
