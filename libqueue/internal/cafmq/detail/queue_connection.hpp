// SPDX-License-Identifier: BSD-3-Clause
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "cafmq/claimed_task.hpp"
#include "cafmq/connection_options.hpp"
#include "cafmq/detail/connection_breaker.hpp"
#include "cafmq/spawn.hpp"
#include "cafmq/task_backend.hpp"

namespace pqxx {
class connection_base;
} // namespace pqxx

namespace cafmq {

/// What a runner asks for when it claims.
struct claim_request {
  /// Written into the task row: which runner runs it.
  std::string node;
  /// Task names this runner has handlers for; no other task is claimed.
  std::vector<std::string> names;
  /// Channel names to serve (all args of each); empty means all channels.
  std::vector<std::string> channels;
  /// Largest batch.
  int limit = 32;
  /// Lease of each claimed attempt; renew it with keep-alive.
  std::chrono::microseconds lease = std::chrono::seconds{30};
  /// Lost attempts in a row (the runner died, or the lease expired,
  /// mid-attempt) after which a task is a poison task: the claim that finds
  /// the last loss ends it `failed` instead of running it again. Any
  /// completion, failure, checkpoint or release resets the count. 0: no
  /// limit (a task still ends when its attempts run out).
  int max_lost = 5;
  /// Channel names not to claim from for now (all args of each), e.g. while
  /// what their handlers need is down; the other channels are served as
  /// usual. Tasks of a paused channel stay pending for any runner that has
  /// not paused it.
  std::vector<std::string> paused;
  /// Also return how long tasks were ready when claimed, for one claimed
  /// task in this many, chosen by a hash of its id (1: every one; 0: none).
  /// Each costs the database an index lookup.
  std::int32_t pickup_every = 0;
  /// Not empty: a claim by id of these tasks (cafmq.claim_ids), which a
  /// spawn's notification named, instead of the fair claim. It takes those
  /// the fair claim would let this runner take now, all of them if it may
  /// (so `limit` does not bound it), and leaves the fair rotation's cursor
  /// alone. Its result's `wait` is zero when the fair claim must follow.
  std::vector<uuid> ids;
};

/// Where the fair round-robin over channels continues.
struct claim_cursor {
  /// Channel name the last claim stopped at; empty: start from the first
  /// channel.
  std::optional<std::string> channel_name;
  /// Channel args the last claim stopped at.
  std::optional<std::string> channel_args;
};

/// A task that a claim ended instead of running it: a cancel was requested,
/// its deadline passed, the lease of its last attempt lapsed, or it is
/// poison (see `claim_request::max_lost`).
struct claim_ending {
  /// The task: id, name, channel and attempt (no payload, no limits).
  claimed_task task;
  /// Its new state: "failed" or "cancelled".
  std::string state;
  /// Why: its last error.
  std::string error;
};

/// What a claim returns.
struct claim_result {
  /// The claimed attempts, at most `claim_request::limit`.
  std::vector<claimed_task> tasks;
  /// The tasks the claim ended instead (rare).
  std::vector<claim_ending> ended;
  /// Where the next claim continues the rotation.
  claim_cursor cursor;
  /// Time until something becomes runnable; zero: claim again now; empty:
  /// nothing is scheduled.
  std::optional<std::chrono::microseconds> wait;
  /// With `claim_request::pickup_every`: (index in `tasks`, how long it was
  /// ready, past its run_at, when claimed) of the tasks chosen.
  std::vector<std::pair<std::uint32_t, std::chrono::microseconds>> pickup;
};

/// State of one recorded failure.
struct fail_result {
  /// The task whose attempt failed.
  uuid id;
  /// "pending" (retry scheduled), "failed" or "cancelled".
  std::string state;
  /// For "pending": when the retry may run; else the lease expiry of the failed
  /// attempt.
  std::chrono::system_clock::time_point run_at;
};

/// What `record` wrote. An attempt in neither list was stale (no longer
/// current: its lease was lost, another runner has its task) and changed
/// nothing.
struct recorded_outcomes {
  /// The tasks whose attempts it completed.
  std::vector<uuid> completed;
  /// The state each recorded failure left its task in.
  std::vector<fail_result> failed;
};

/// A lease renewal's answer for an attempt this runner still owns, or
/// (`ended`) whose outcome was written while the renewal ran.
struct lease_state {
  /// The task.
  uuid id;
  /// A cancel was requested for the task: fire the attempt's token.
  bool cancel_requested = false;
  /// Not renewed: the attempt's outcome is written (its lease was not lost).
  bool ended = false;
};

/// True if a renewal of one attempt renewed it.
inline bool renewed_one(const std::vector<lease_state>& xs) {
  return !xs.empty() && !xs.front().ended;
}

/// What a direct dispatch wrote in one transaction: the spawn, and the
/// claim by id of the task it created.
struct dispatched_spawn {
  spawn_result spawned;
  /// The claimed attempt, or no task: the claim did not take it (then its
  /// `wait` is zero if the task is pending and held back), or the spawn
  /// created nothing (a unique key's duplicate).
  claim_result claimed;
};

/// A runner's record of the attempts that started in it (its session's
/// `started`, if `started` is set: cafmq.record_started), and of those that
/// started on joined workers since the last record, each on its task's row
/// (`worker_ids`, `attempts`, `workers`: cafmq.record_workers). Throws
/// libpqxx exceptions.
void record_started(pqxx::connection_base& conn, const std::string& node,
                    const std::optional<std::vector<uuid>>& started,
                    const std::vector<uuid>& worker_ids,
                    const std::vector<int>& attempts,
                    const std::vector<std::string>& workers);

/// One database connection that claims tasks and writes their outcomes, each
/// in a short transaction of its own. Not thread-safe: one owner at a time,
/// except for its `breaker()`. Also a `task_backend`, so handlers can run on
/// it directly. A broken connection stays broken (every call returns
/// `errc::database_unavailable`): the owner opens a new one.
class queue_connection : public task_backend {
public:
  ~queue_connection() override;

  /// Opens a connection to `url` (a libpq URI or key=value string) with the
  /// bounds of `opts`.
  static caf::expected<std::shared_ptr<queue_connection>>
  open(const std::string& url, const connection_options& opts = {});

  /// Claims up to `req.limit` tasks, continuing the fair rotation (or,
  /// with `req.ids`, those tasks by id).
  caf::expected<claim_result> claim(const claim_request& req);

  /// Direct dispatch: spawns `task` (its id set) and claims it by id for
  /// `req`'s runner (its node, names, channels, local pauses, lease and
  /// poison bound; not its limit or ids) in one statement, its own
  /// transaction (cafmq.spawn_claimed): the task is written already
  /// running and starts once this returns. The spawn's notification
  /// leaves it out; if the claim did not take a pending task, its channel
  /// is notified as after a spawn.
  caf::expected<dispatched_spawn> spawn_claimed(const spawn_builder& task,
                                                const claim_request& req);

  /// Completes attempts; returns the ids completed (stale ones are left out).
  /// `results` is empty, or one JSON result per attempt ("" where none);
  /// `workers` is empty, or the worker that ran each ("" where the runner
  /// did).
  caf::expected<std::vector<uuid>>
  complete(const std::vector<attempt_ref>& xs,
           const std::vector<std::string>& results = {},
           const std::vector<std::string>& workers = {});

  caf::expected<std::vector<fail_result>>
  /// Records failed attempts: a retryable failure with attempts left, whose
  /// retry would start before the deadline, makes its task pending again after
  /// the backoff; otherwise the task ends failed (cancelled when a cancel was
  /// requested). Returns what it recorded; stale attempts are left out.
  fail(const std::vector<attempt_failure>& xs);

  /// Records finished attempts, completions and failures, gives back
  /// attempts that never started (`released`) and hands back attempts whose
  /// handlers were abandoned (`abandoned`, as `hand_back_attempts`: the
  /// attempt counts, the lease ends now), in one transaction. `results`
  /// holds the JSON results of the completed ones and `workers` their
  /// workers, as in `complete`. Returns what it completed and failed.
  caf::expected<recorded_outcomes>
  record(const std::vector<attempt_ref>& completed,
         const std::vector<attempt_failure>& failed,
         const std::vector<attempt_ref>& released = {},
         const std::vector<std::string>& results = {},
         const std::vector<attempt_ref>& abandoned = {},
         const std::vector<std::string>& workers = {});

  /// Gives back attempts claimed but never started: pending again at once,
  /// and the claim does not count as an attempt. Returns the ids given back.
  caf::expected<std::vector<uuid>> release(const std::vector<attempt_ref>& xs);

  /// Renews leases; attempts not in the answer are no longer owned.
  caf::expected<std::vector<lease_state>>
  keep_alive(const std::vector<attempt_ref>& xs,
             std::chrono::microseconds lease);

  // -- task_backend ---------------------------------------------------------

  using task_backend::complete;

  caf::error complete(const attempt_ref& x, const std::string& result) override;

  caf::error checkpoint(const attempt_ref& x,
                        const cafmq::checkpoint& cp) override;

  caf::error keep_alive(const attempt_ref& x,
                        std::chrono::microseconds lease) override;

  /// The underlying connection, e.g. for the caller's own transactions.
  pqxx::connection_base& connection() noexcept;

  /// Breaks this connection's socket from another thread; released when the
  /// connection closes.
  const std::shared_ptr<connection_breaker>& breaker() const noexcept;

  /// Where the next `claim` continues the fair rotation over channels.
  const claim_cursor& cursor() const noexcept {
    return cursor_;
  }

private:
  struct impl;

  explicit queue_connection(std::unique_ptr<impl> ptr);

  std::unique_ptr<impl> impl_;
  claim_cursor cursor_;
};

} // namespace cafmq
