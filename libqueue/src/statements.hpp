// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// The queue's statements, run in a given transaction. They throw libpqxx
// exceptions; public functions translate them with `guarded`.

#include <chrono>
#include <string>
#include <vector>

#include <pqxx/pqxx>

#include "cafmq/checkpoint.hpp"
#include "cafmq/claimed_task.hpp"
#include "cafmq/detail/queue_connection.hpp"

namespace cafmq::detail {

claim_result claim(pqxx::transaction_base& tx, const claim_request& req,
                   const claim_cursor& cursor);

/// Reads the rows of a claim (the columns of queries/claim_columns.sql).
claim_result read_claim(const pqxx::result& rows);

/// Direct dispatch: spawns `specs` (a JSON array of one spec) and claims
/// it by id as `req` says, in one statement (cafmq.spawn_claimed).
dispatched_spawn spawn_claimed(pqxx::transaction_base& tx,
                               const std::string& specs,
                               const claim_request& req);

/// Returns the ids completed now. `results` is empty, or holds one JSON
/// result per attempt ("" where none); `workers` is empty, or names the
/// worker that ran each attempt ("" where the runner did).
std::vector<uuid> complete(pqxx::transaction_base& tx,
                           const std::vector<attempt_ref>& xs,
                           const std::vector<std::string>& results = {},
                           const std::vector<std::string>& workers = {});

/// Gives back attempts that never started; returns the ids given back.
std::vector<uuid> release(pqxx::transaction_base& tx,
                          const std::vector<attempt_ref>& xs);

/// Hands back attempts whose handlers still run but are no longer waited
/// for: their leases end now, so the next claim makes a new attempt and a
/// late outcome of the old one is fenced. Returns how many were running.
int hand_back(pqxx::transaction_base& tx, const std::vector<attempt_ref>& xs);

std::vector<fail_result> fail(pqxx::transaction_base& tx,
                              const std::vector<attempt_failure>& xs);

std::vector<lease_state> keep_alive(pqxx::transaction_base& tx,
                                    const std::vector<attempt_ref>& xs,
                                    std::chrono::microseconds lease);

/// Returns false when the attempt is not current.
bool checkpoint(pqxx::transaction_base& tx, const attempt_ref& x,
                const cafmq::checkpoint& cp);

} // namespace cafmq::detail
