#pragma once

// Small helpers shared by the db tests.

#include <string>
#include <vector>

#include <pqxx/pqxx>

#include "cafmq/client.hpp"
#include "cafmq/error.hpp"
#include "cafmq/queue_connection.hpp"
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

/// The value of `x`, or `fallback` when it holds an error.
template <class T>
T value_or(const caf::expected<T>& x, T fallback) {
  return x ? *x : fallback;
}

/// Moves every time of a task `secs` seconds into the past, as if that much
/// time had passed, without sleeping.
inline void age_task(pqxx::connection_base& conn, const uuid& id, int secs) {
  pqxx::work tx{conn};
  tx.exec_params0("UPDATE cafmq.tasks SET run_at = run_at - make_interval("
                  "secs => $2), commit_deadline = commit_deadline - "
                  "make_interval(secs => $2) WHERE id = $1::uuid",
                  to_string(id), secs);
  tx.commit();
}

} // namespace cafmq::test
