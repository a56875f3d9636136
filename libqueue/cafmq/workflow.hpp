// SPDX-License-Identifier: BSD-3-Clause
#pragma once

#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "cafmq/current_task.hpp"
#include "cafmq/spawn.hpp"
#include "cafmq/uuid.hpp"

namespace pqxx {
class connection_base;
class transaction_base;
} // namespace pqxx

namespace cafmq {

/// A graph of tasks spawned in one call and one transaction: each task runs
/// after the tasks it names as parents, and all of them carry the
/// workflow's id (`cafmq workflow show ID`). Parents come before their
/// children: a task may name a task added earlier, or one spawned already.
///
///     cafmq::workflow w;
///     auto a = w.add(spawn_builder{"fetch"}.json(x));
///     auto b = w.add(spawn_builder{"fetch"}.json(y));
///     auto sum = w.add(spawn_builder{"sum"}, {a, b});
///     w.add(spawn_builder{"clean_up"}, {sum}, parent_failure::run);
///     w.spawn(tx);
class workflow {
public:
  /// An empty workflow with a new id.
  workflow();

  /// An empty workflow with id `x`.
  explicit workflow(const uuid& x);

  /// The workflow's id.
  const uuid& id() const noexcept {
    return id_;
  }

  /// Adds `x`, to run after `parents` (added before, or spawned already)
  /// with `policy` when one of them fails or is cancelled. Returns the
  /// task's id: the one `x` has, or a new one.
  uuid add(spawn_builder x, const std::vector<uuid>& parents = {},
           parent_failure policy = parent_failure::cancel);

  /// The tasks, in the order added.
  const std::vector<spawn_builder>& tasks() const noexcept {
    return tasks_;
  }

  /// Spawns every task inside the caller's transaction; all or nothing.
  /// Results come in the order added.
  caf::expected<std::vector<spawn_result>>
  spawn(pqxx::transaction_base& tx) const;

  /// The same, in a transaction of its own on `conn`.
  caf::expected<std::vector<spawn_result>>
  spawn(pqxx::connection_base& conn) const;

private:
  uuid id_;
  std::vector<spawn_builder> tasks_;
};

/// A set of tasks with callbacks: `on_success` runs once when every member
/// completed (it is cancelled when one fails or is cancelled), `on_finish`
/// once when every member ended, however. A callback reads the members'
/// ends with `current_task::parent_results()` (`count_ends` sums them up).
/// Each callback runs exactly once, however many runners complete members
/// at the same moment: the last member's completion readies it.
class batch {
public:
  /// An empty batch with a new id (the id of its workflow).
  batch() = default;

  /// The batch's id.
  const uuid& id() const noexcept {
    return graph_.id();
  }

  /// Adds a member; returns its id.
  uuid add(spawn_builder x);

  /// Sets the task that runs when every member completed.
  batch& on_success(spawn_builder x);

  /// Sets the task that runs when every member ended.
  batch& on_finish(spawn_builder x);

  /// The members, then the callbacks, as one workflow.
  workflow graph() const;

  /// Spawns the members and callbacks inside the caller's transaction.
  caf::expected<std::vector<spawn_result>>
  spawn(pqxx::transaction_base& tx) const;

  /// The same, in a transaction of its own on `conn`.
  caf::expected<std::vector<spawn_result>>
  spawn(pqxx::connection_base& conn) const;

private:
  workflow graph_;
  std::vector<uuid> members_;
  std::optional<spawn_builder> on_success_;
  std::optional<spawn_builder> on_finish_;
};

/// How many parents ended in each way.
struct end_counts {
  /// Parents that completed.
  int completed = 0;
  /// Parents that failed.
  int failed = 0;
  /// Parents that were cancelled.
  int cancelled = 0;
};

/// Sums up the ends of a task's parents (a batch callback's members).
end_counts count_ends(const std::vector<parent_result>& xs);

} // namespace cafmq
