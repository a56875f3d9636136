// SPDX-License-Identifier: BSD-3-Clause
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>
#include <nlohmann/json.hpp>

#include "cafmq/task_options.hpp"
#include "cafmq/uuid.hpp"

namespace pqxx {
class connection_base;
class transaction_base;
} // namespace pqxx

namespace cafmq {

/// What a spawn did with one task.
struct spawn_result {
  /// The new task, or for a duplicate the live task holding the unique key.
  uuid id;
  /// False when a live task already held the unique key: nothing was added.
  bool created = false;
};

namespace detail {
struct spawn_access;
} // namespace detail

/// What a task spawned after parents does when one of them fails or is
/// cancelled.
enum class parent_failure {
  /// It ends cancelled at once, with "parent ID failed: ERROR" (the default).
  cancel,
  /// It runs anyway once every parent has ended (a clean-up step); its
  /// handler sees each parent's end in `current_task::parent_results()`.
  run,
};

/// Returns "cancel" or "run".
const char* to_string(parent_failure x) noexcept;

/// Builds one task: starts from a definition's defaults, overrides any option,
/// then spawns it in the caller's transaction or on a connection.
class spawn_builder {
public:
  /// The clock of `run_at` and `deadline`.
  using clock = std::chrono::system_clock;

  /// A task named `name` with the options `defaults`; each spawn draws a
  /// new time-ordered id unless `id(x)` sets one.
  explicit spawn_builder(std::string name, const task_options& defaults = {});

  /// Gives the task this id. Without it each spawn draws a new one, so
  /// copies of a builder (and one builder spawned twice) make distinct
  /// tasks; an id set here is copied with the builder. Spawning fails with
  /// `errc::duplicate_id` while a task with that id exists.
  spawn_builder& id(const uuid& x);
  /// Channel name; at most `max_name_bytes`.
  spawn_builder& channel_name(std::string x);
  /// Channel args; at most `max_channel_args_bytes`.
  spawn_builder& channel_args(std::string x);
  /// Runs no earlier than this long after spawn (database clock).
  spawn_builder& delay(std::chrono::microseconds x);
  /// Runs no earlier than this moment.
  spawn_builder& run_at(clock::time_point x);
  /// Retries after the first attempt, 0 to 1,000,000.
  spawn_builder& retries(int x);
  /// Delay before the first retry, doubling per retry; zero or more.
  spawn_builder& backoff(std::chrono::microseconds initial);
  /// Upper bound of the retry delay; not less than the backoff.
  spawn_builder& backoff_cap(std::chrono::microseconds cap);
  /// Spreads retry delays randomly (see retry_jitter).
  spawn_builder& jitter(retry_jitter x);
  /// Runs after every earlier ordered task of its channel (name and args) has
  /// finished.
  spawn_builder& ordered(bool x = true);

  /// Sets the priority (see `task_options::priority`).
  spawn_builder& priority(int x);
  /// Two-phase: the task is reserved and runs only after `commit()`; it
  /// expires if not committed within `x`.
  spawn_builder& commit_interval(std::chrono::microseconds x);
  /// Per-attempt time limit, positive: the runtime asks an attempt still
  /// running then to stop (`cancel_reason::timeout`) and fails it.
  spawn_builder& timeout(std::chrono::microseconds x);
  /// No attempt starts after this moment, and none is retried past it; the
  /// runtime asks an attempt still running then to stop
  /// (`cancel_reason::deadline`).
  spawn_builder& deadline(clock::time_point x);
  /// At most one live (uncommitted, waiting, pending or running) task per
  /// key.
  spawn_builder& unique_key(std::string x);

  /// Runs only after each of `parents` has ended: until then the task is
  /// `task_state::waiting`, and the completion of the last parent makes it
  /// ready in the same transaction. A parent is a task spawned already, or
  /// one that comes earlier in the same `spawn_many` (give it an `id`).
  /// Adds to the parents of earlier calls; a parent named twice counts once.
  spawn_builder& after(const std::vector<uuid>& parents);
  /// What the task does when a parent fails or is cancelled (default:
  /// `parent_failure::cancel`).
  spawn_builder& on_parent_failure(parent_failure x);
  /// Makes the task a member of workflow `x` (see `cafmq::workflow`).
  spawn_builder& workflow(const uuid& x);

  /// The parents set with `after`.
  const std::vector<uuid>& parents() const noexcept {
    return parents_;
  }

  /// The workflow set with `workflow(x)`, if any.
  const std::optional<uuid>& workflow() const noexcept {
    return workflow_;
  }

  /// JSON payload from any type with `to_json`.
  template <class T>
  spawn_builder& json(const T& x) {
    json_ = nlohmann::json(x).dump();
    return *this;
  }

  /// JSON payload as text; checked when spawning.
  spawn_builder& raw_json(std::string x);
  /// Binary payload.
  spawn_builder& bytes(std::string x);

  /// The id set with `id(x)`; none when each spawn draws one (the spawn
  /// result has it).
  const std::optional<uuid>& id() const noexcept {
    return id_;
  }

  /// The task's name.
  const std::string& name() const noexcept {
    return name_;
  }

  /// Checks every option; the same check runs before each spawn.
  caf::error validate() const;

  /// Spawns inside the caller's transaction: nothing is visible or notified
  /// unless it commits.
  caf::expected<spawn_result> spawn(pqxx::transaction_base& tx) const;

  /// Spawns in a transaction of its own on `conn`.
  caf::expected<spawn_result> spawn(pqxx::connection_base& conn) const;

private:
  friend struct detail::spawn_access;

  std::optional<uuid> id_;
  std::string name_;
  task_options opts_;
  std::optional<std::chrono::microseconds> delay_;
  std::optional<clock::time_point> run_at_;
  std::optional<std::chrono::microseconds> commit_interval_;
  std::optional<clock::time_point> deadline_;
  std::optional<std::string> unique_key_;
  std::optional<std::string> json_;
  std::optional<std::string> bytes_;
  std::vector<uuid> parents_;
  std::optional<parent_failure> on_parent_failure_;
  std::optional<uuid> workflow_;
};

/// Spawns many tasks in one statement; ordered tasks of one channel keep the
/// order of `xs`. Results come in the order of `xs`. All or nothing.
caf::expected<std::vector<spawn_result>>
spawn_many(pqxx::transaction_base& tx, const std::vector<spawn_builder>& xs);

/// The same, in a transaction of its own on `conn`.
caf::expected<std::vector<spawn_result>>
spawn_many(pqxx::connection_base& conn, const std::vector<spawn_builder>& xs);

} // namespace cafmq
