// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// Small helpers shared by the db tests.

#include <string>
#include <vector>

#include <pqxx/pqxx>

#include "cafmq/client.hpp"
#include "cafmq/detail/queue_connection.hpp"
#include "cafmq/error.hpp"
#include "cafmq/expected.hpp"
#include "cafmq/spawn.hpp"

namespace cafmq::test {

/// A claim request for `names` with a large lease.
inline claim_request request(std::vector<std::string> names, int limit = 32,
                             std::string node = "test") {
  claim_request req;
  req.node = std::move(node);
  req.names = std::move(names);
  req.limit = limit;
  return req;
}

/// The ledgers of `cafmq-e2e runner` (tests/support/e2e/runner.cpp): e2e_runs,
/// written by each completing transaction, and e2e_starts, by each start.
inline void create_e2e_ledgers(pqxx::connection_base& conn) {
  pqxx::nontransaction{conn}.exec0(
    "CREATE TABLE e2e_runs (id uuid, attempt int, node text, channel text, "
    "payload int, started timestamptz, finished timestamptz);"
    "CREATE TABLE e2e_starts (id uuid, attempt int, node text, "
    "at timestamptz)");
}

/// Claims once and throws on error.
inline claim_result claim_or_throw(queue_connection& q,
                                   const claim_request& req) {
  auto result = q.claim(req);
  if (!result)
    throw std::runtime_error("claim failed: " + render(result.error()));
  return std::move(*result);
}

/// Spawns in one statement and throws on error.
inline std::vector<spawn_result>
spawn_or_throw(pqxx::connection_base& conn,
               const std::vector<spawn_builder>& xs) {
  auto result = spawn_many(conn, xs);
  if (!result)
    throw std::runtime_error("spawn failed: " + render(result.error()));
  return std::move(*result);
}

/// The task's state name, or "unknown".
inline std::string state_of(pqxx::connection_base& conn, const uuid& id) {
  auto st = status(conn, id);
  return st ? to_string(st->state) : "unknown";
}

/// Moves every time of a task `secs` seconds into the past, as if that much
/// time had passed, without sleeping.
inline void age_task(pqxx::connection_base& conn, const uuid& id, int secs) {
  pqxx::work tx{conn};
  tx.exec_params0("UPDATE cafmq.tasks_live SET run_at = run_at - make_interval("
                  "secs => $2), commit_deadline = commit_deadline - "
                  "make_interval(secs => $2) WHERE id = $1::uuid",
                  to_string(id), secs);
  tx.commit();
}

/// Inserts `n` ready unordered tasks named "t" into channel `channel_name`
/// (empty args) straight into the tables: a large backlog in a second or
/// two. Then analyzes them, so that plans see the backlog.
inline void insert_backlog(pqxx::connection_base& conn,
                           const std::string& channel_name, int n) {
  pqxx::work tx{conn};
  tx.exec_params0("INSERT INTO cafmq.tasks_live (id, seq, name, channel_name, "
                  "channel_args, state, ordered, max_attempts, run_at, "
                  "backoff, backoff_cap) SELECT gen_random_uuid(), "
                  "nextval('cafmq.task_seq'), 't', $1, '', 'pending', false, "
                  "5, now(), '1 s', '1 h' FROM generate_series(1, $2)",
                  channel_name, n);
  tx.commit();
  pqxx::nontransaction{conn}.exec0("ANALYZE cafmq.tasks_live");
}

/// Ends the live tasks that match `where` (a condition on their columns)
/// by hand, in `state` (completed, failed or cancelled), as cafmq would:
/// they move to the history, then `set` (assignments, such as "attempt =
/// 5") changes their history rows. Returns how many it ended.
inline int finish_by_hand(pqxx::transaction_base& tx, const std::string& where,
                          const std::string& state,
                          const std::string& set = {}) {
  auto ids = tx.exec1(
    "WITH ended AS (DELETE FROM cafmq.tasks_live t WHERE " + where
    + " RETURNING t), moved AS (INSERT INTO cafmq.tasks_history SELECT h.* "
      "FROM ended e, cafmq.finished_row(e.t, '"
    + state
    + "', NULL, NULL, (e.t).lost_attempts) h RETURNING id, finished_at, "
      "channel_name, state), counted AS (INSERT INTO cafmq.finished_counts "
      "SELECT (finished_at AT TIME ZONE 'UTC')::date, channel_name, state, "
      "count(*) FROM moved GROUP BY 1, 2, 3) SELECT "
      "coalesce(array_agg(id), '{}')::text, count(*) FROM moved");
  if (!set.empty())
    tx.exec0("UPDATE cafmq.tasks_history SET " + set + " WHERE id = ANY ('"
             + ids[0].as<std::string>() + "'::uuid[])");
  return ids[1].as<int>();
}

/// Runs `f` in a transaction (rolled back) and returns how many rows of
/// the task tables (live and history) it read: a plan's cost in rows, not
/// in time.
template <class F>
long tasks_read(pqxx::connection_base& conn, F f) {
  // Counts of earlier transactions may linger in the pg_stat_xact views
  // until flushed (PostgreSQL 15); this transaction ends with a flush.
  pqxx::nontransaction{conn}.exec("SELECT pg_stat_force_next_flush()");
  pqxx::work tx{conn};
  f(tx);
  return tx
    .exec1("SELECT coalesce(sum(coalesce(idx_tup_fetch, 0) + seq_tup_read), "
           "0) FROM pg_stat_xact_user_tables WHERE relid = "
           "'cafmq.tasks_live'::regclass OR relid IN (SELECT inhrelid FROM "
           "pg_inherits WHERE inhparent = 'cafmq.tasks_history'::regclass)")[0]
    .as<long>();
}

} // namespace cafmq::test
