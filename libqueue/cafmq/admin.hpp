// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// Operating the queue: list and look into tasks, count them per channel and
// state, retry or cancel them one by one or by filter, see which migrations
// are pending. The CLI, the metrics and the dashboard all go through these
// functions (migration_status is in cafmq/migrate.hpp), which read the views
// `cafmq.queue_depth`, `cafmq.queue_throughput` and `cafmq.queue_totals` and
// call the same SQL functions as the rest of the API (`cafmq.retry`,
// `cafmq.cancel`).

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <caf/expected.hpp>

#include "cafmq/task_status.hpp"
#include "cafmq/uuid.hpp"

namespace pqxx {
class connection_base;
} // namespace pqxx

namespace cafmq {

/// Which tasks a listing, a bulk retry or a bulk cancel applies to. Every
/// field that is set must match; an empty filter matches every task.
struct task_filter {
  /// The task is in one of these states (any state when empty).
  std::vector<task_state> states;
  /// The task's name equals this.
  std::optional<std::string> name;
  /// The task's channel name equals this.
  std::optional<std::string> channel_name;
  /// The task was created at least this long ago (database clock).
  std::optional<std::chrono::microseconds> older_than;
  /// The task was created at most this long ago (database clock).
  std::optional<std::chrono::microseconds> newer_than;
};

/// One task in a listing.
struct task_row {
  /// The task's id.
  uuid id;
  /// Its state, attempts, times and last error.
  task_status status;
};

/// One page of a listing, newest task first.
struct task_page {
  /// The tasks on this page, newest first (by id: ids are time-ordered).
  std::vector<task_row> tasks;
  /// The cursor of the next page (pass it as `after`); unset on the last.
  std::optional<uuid> next;
};

/// Lists tasks matching `filter`, newest first, at most `limit` (1..1000)
/// per page, starting after the cursor `after` (keyset paging on the
/// primary key: a page costs the same on a table of a million rows).
caf::expected<task_page> list_tasks(pqxx::connection_base& conn,
                                    const task_filter& filter, int limit = 50,
                                    const std::optional<uuid>& after = {});

/// Everything the queue knows about one task.
struct task_detail {
  /// The task's id.
  uuid id;
  /// Its state, attempts, times and last error.
  task_status status;
  /// Its JSON payload, if any.
  std::optional<std::string> payload_json;
  /// The size of its binary payload, if any.
  std::optional<std::int64_t> payload_bytes;
  /// Whether it runs after every earlier ordered task of its channel.
  bool ordered = false;
  /// Its unique key, if any.
  std::optional<std::string> unique_key;
  /// Per-attempt time limit, if any.
  std::optional<std::chrono::microseconds> timeout;
  /// No attempt starts after this moment, if set.
  std::optional<task_status::time_point> deadline;
  /// Delay before the first retry, and its upper bound.
  std::chrono::microseconds backoff{0};
  /// Upper bound of the retry delay.
  std::chrono::microseconds backoff_cap{0};
  /// Attempts lost to expired leases.
  int lost_attempts = 0;
  /// Every attempt that started, oldest first (cafmq.task_attempts).
  std::vector<attempt_record> attempts;
  /// The workflow it belongs to (`cafmq::workflow::id`), if any.
  std::optional<uuid> workflow_id;
};

/// Looks one task up with its payload; `errc::unknown_task` if there is none.
caf::expected<task_detail> inspect_task(pqxx::connection_base& conn,
                                        const uuid& id);

/// Counts of one channel in one state, from the views.
struct queue_stat {
  /// The channel's name.
  std::string channel_name;
  /// The state counted.
  task_state state = task_state::pending;
  /// Tasks in this state (for final states: all that are kept).
  std::int64_t tasks = 0;
  /// For `pending`: how many may run now (not scheduled for later).
  std::int64_t ready = 0;
  /// For `pending`: how long the oldest ready task has waited.
  std::optional<std::chrono::microseconds> oldest_pending_age;
  /// For final states: tasks that reached it in the last minute.
  std::int64_t last_minute = 0;
};

/// Counts per channel and state. With `finished` false, only the live
/// states (uncommitted, pending, running: cheap, from partial indexes) and
/// the last minute's finished tasks; with true, also the totals of finished
/// tasks (from the counts kept with the history, `cafmq.finished_counts`:
/// no scan of the tasks).
caf::expected<std::vector<queue_stat>> queue_stats(pqxx::connection_base& conn,
                                                   bool finished = true);

/// Tasks that reached each final state in a window of time.
struct finished_counts {
  /// Tasks that completed.
  std::int64_t completed = 0;
  /// Tasks that failed for good.
  std::int64_t failed = 0;
  /// Tasks cancelled.
  std::int64_t cancelled = 0;
};

/// One sample of the queue: its live counts now, and the tasks that
/// finished in the windows between given moments (the dashboard's charts).
struct queue_sample {
  /// The database's clock when sampled.
  task_status::time_point at;
  /// Counts per channel of the live states (uncommitted, pending, running),
  /// as `queue_stats(conn, false)` has them, without `last_minute`.
  std::vector<queue_stat> live;
  /// One per bound: the tasks that finished from bound i up to bound
  /// i + 1 (the last: up to `at`).
  std::vector<finished_counts> finished;
};

/// Samples the queue: the live counts (cheap: partial indexes) and, with
/// ascending `bounds`, the tasks that finished in each window from one
/// bound to the next, the last up to now (a range of the finished index).
/// Tasks count by the moment their ending was written (its transaction's
/// start): sampling a window again after its writes committed counts those
/// that were in flight at the first sample.
caf::expected<queue_sample>
sample_queue(pqxx::connection_base& conn,
             const std::vector<task_status::time_point>& bounds);

/// What a retry did to each task asked for.
struct retry_result {
  /// Tasks that are pending again, with a fresh attempt budget.
  std::vector<uuid> retried;
  /// Tasks left alone: unknown, not failed or cancelled, or their unique
  /// key is held by a live task; with the reason.
  std::vector<std::pair<uuid, std::string>> skipped;
};

/// Makes failed or cancelled tasks pending again with a fresh attempt
/// budget (as many attempts as they were first given). Their attempt
/// numbers go on counting (fencing), their last error stays.
caf::expected<retry_result> retry(pqxx::connection_base& conn,
                                  const std::vector<uuid>& ids);

/// Retries every failed or cancelled task matching `filter` (its states
/// narrowed to failed and cancelled), at most `limit`.
caf::expected<retry_result> retry_matching(pqxx::connection_base& conn,
                                           const task_filter& filter,
                                           int limit = 100000);

/// What a bulk cancel did.
struct cancel_counts {
  /// Tasks cancelled at once (they were not running).
  std::int64_t cancelled = 0;
  /// Running tasks asked to stop.
  std::int64_t requested = 0;
};

/// Cancels every live task matching `filter` (its states narrowed to
/// uncommitted, pending and running), at most `limit`.
caf::expected<cancel_counts> cancel_matching(pqxx::connection_base& conn,
                                             const task_filter& filter,
                                             int limit = 100000);

/// One task of a workflow, as `cafmq workflow show` prints it.
struct workflow_task {
  /// The task.
  uuid id;
  /// Its name.
  std::string name;
  /// Its state (waiting until its parents ended).
  task_state state = task_state::pending;
  /// The tasks it runs after.
  std::vector<uuid> parents;
  /// Its result as JSON text, once completed with one.
  std::optional<std::string> result;
  /// Its last error, if any.
  std::optional<std::string> error;
  /// It runs even when a parent failed (`parent_failure::run`).
  bool runs_after_failure = false;
};

/// The tasks of workflow `workflow` (`cafmq::workflow::id`), in spawn order;
/// empty for an unknown workflow.
caf::expected<std::vector<workflow_task>>
workflow_tasks(pqxx::connection_base& conn, const uuid& workflow);

/// Cancels every unfinished task of a workflow, children before parents: a
/// child that would run after a failure does not start either.
caf::expected<cancel_counts> cancel_workflow(pqxx::connection_base& conn,
                                             const uuid& workflow);

/// Retries the failed tasks of a workflow; the descendants they had
/// cancelled wait for them again.
caf::expected<retry_result> retry_workflow(pqxx::connection_base& conn,
                                           const uuid& workflow);

/// What a pause applies to.
enum class pause_kind {
  /// Every task of a channel name.
  channel,
  /// Every task of a task name.
  task,
};

/// "channel" or "task".
std::string to_string(pause_kind x);

/// One pause in force.
struct pause_info {
  /// Channel name or task name.
  pause_kind kind = pause_kind::channel;
  /// The channel name or task name paused.
  std::string value;
  /// When it was paused (database clock).
  task_status::time_point paused_at;
};

/// Pauses a channel name or a task name across the cluster: from the commit
/// on, no runner claims its tasks until `resume`; running tasks finish.
/// Returns false if it was paused already.
caf::expected<bool> pause(pqxx::connection_base& conn, pause_kind kind,
                          const std::string& value);

/// Resumes a paused channel name or task name and wakes the runners.
/// Returns false if it was not paused.
caf::expected<bool> resume(pqxx::connection_base& conn, pause_kind kind,
                           const std::string& value);

/// The pauses in force, oldest first.
caf::expected<std::vector<pause_info>> pauses(pqxx::connection_base& conn);

/// Limits of a channel name that hold across every runner, enforced in the
/// claim itself.
struct channel_limit {
  /// The channel name (all its args together).
  std::string channel_name;
  /// At most this many of its tasks run at once, anywhere. A task whose
  /// lease expired (its runner is gone) frees its slot.
  std::optional<int> max_running;
  /// At most this many starts in any window of `rate_period`.
  std::optional<int> rate_limit;
  /// The rate limit's window; set exactly when `rate_limit` is.
  std::optional<std::chrono::microseconds> rate_period;
  /// Read only (`channel_limits`): its tasks running now.
  std::int64_t running = 0;
  /// Read only (`channel_limits`): its starts in the rate window now.
  std::int64_t recent_starts = 0;
};

/// Sets (or replaces) the limits of a channel name. Errors:
/// `errc::invalid_argument` when neither limit is set, max_running < 1, or
/// a rate limit is not 1 to 100000 starts per positive period.
caf::error set_channel_limit(pqxx::connection_base& conn,
                             const channel_limit& x);

/// Removes the limits of a channel name; false if it had none.
caf::expected<bool> clear_channel_limit(pqxx::connection_base& conn,
                                        const std::string& channel_name);

/// Every channel limit, by channel name.
caf::expected<std::vector<channel_limit>>
channel_limits(pqxx::connection_base& conn);

// -- the live table after a held snapshot -----------------------------------

/// How long the oldest transaction of the database that keeps vacuum from
/// removing dead row versions has run (`cafmq.oldest_snapshot`): a held
/// snapshot, a session idle in a transaction, a prepared transaction. None
/// when there is none that this role can see (other roles' sessions count
/// only with pg_read_all_stats).
caf::expected<std::optional<std::chrono::milliseconds>>
oldest_snapshot(pqxx::connection_base& conn);

/// The first step of compacting cafmq.tasks_live: vacuums it (outside any
/// transaction: vacuum gives the empty pages at its end back), drops the
/// index builds that a failed rebuild left invalid, and answers the indexes
/// worth rebuilding (`cafmq.live_index_upkeep`: over `min_index_bytes` and
/// mostly empty), largest first.
caf::expected<std::vector<std::string>>
vacuum_live_table(pqxx::connection_base& conn,
                  std::int64_t min_index_bytes = std::int64_t{1} << 20);

/// Rebuilds one index of cafmq.tasks_live (a name `vacuum_live_table`
/// answered) with REINDEX INDEX CONCURRENTLY: claims and endings go on
/// meanwhile; it waits for the transactions that were running when it
/// began. Answers the index's size after, in bytes; `errc::invalid_argument`
/// when `name` is no index of the live table.
caf::expected<std::int64_t> rebuild_live_index(pqxx::connection_base& conn,
                                               const std::string& name);

/// Vacuums cafmq.tasks_live if a vacuum is due (`cafmq.live_vacuum_due`):
/// at least `min_dead_rows` dead row versions, some of them removable (no
/// transaction has run since before the table's last vacuum). A runner's
/// maintenance asks every second, so that a drain's claims do not read the
/// dead head of the ready queue until autovacuum comes. VACUUM
/// (SKIP_LOCKED): a vacuum of the table running elsewhere is not waited
/// for. Answers whether it vacuumed.
caf::expected<bool> vacuum_live_table_if_due(pqxx::connection_base& conn,
                                             std::int64_t min_dead_rows);

/// What `compact_live_table` did.
struct compaction_report {
  /// The live table with its indexes and TOAST, in bytes, before and after.
  std::int64_t bytes_before = 0;
  /// After.
  std::int64_t bytes_after = 0;
  /// The indexes rebuilt.
  std::vector<std::string> rebuilt;
};

/// All the steps at once (the CLI's `compact`): vacuum_live_table, a
/// rebuild of each index it answers, and a second vacuum, which gives back
/// the pages at the table's end that the tasks running during the first
/// one held. The runtime's maintenance takes the same steps one request at
/// a time after a held snapshot ends.
caf::expected<compaction_report> compact_live_table(pqxx::connection_base& conn,
                                                    std::int64_t min_index_bytes
                                                    = std::int64_t{1} << 20);

} // namespace cafmq
