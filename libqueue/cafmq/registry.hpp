// SPDX-License-Identifier: BSD-3-Clause
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "cafmq/schedule.hpp"
#include "cafmq/spawn.hpp"
#include "cafmq/task_options.hpp"

namespace cafmq {

class current_task;

/// A plain-function handler. It runs off the actor scheduler; returning an
/// error (or throwing) fails the attempt.
using task_handler = std::function<caf::error(current_task&)>;

/// Decides whether a handler's error is a definitive failure: `true` fails
/// the task at once, whatever attempts are left; `false` makes the attempt
/// retryable (retried while attempts and the deadline allow). Called for
/// every error a handler returns or throws and for timeouts and deadlines;
/// never for cancellation, which always ends the task cancelled. A custom
/// filter extends `default_is_failure`: what the default finds definitive
/// stays definitive whatever the filter says (see `is_definitive_failure`).
using failure_filter = std::function<bool(const caf::error&)>;

/// The default filter: only a payload the handler cannot decode
/// (`errc::payload_mismatch`) is definitive.
bool default_is_failure(const caf::error& err);

/// True when `err` fails a task at once: `default_is_failure(err)`, or
/// `custom(err)` when a custom filter is set.
bool is_definitive_failure(const failure_filter& custom, const caf::error& err);

/// A task: its name, its handler and the defaults every spawn starts from
/// (the counterpart of sqlxmq's `#[job]` attribute).
struct task_definition {
  /// The name spawns use and runners claim by; not empty, at most
  /// `max_name_bytes`.
  std::string name;
  /// Runs each attempt; required.
  task_handler handler;
  /// Options every spawn of this task starts from.
  task_options defaults;
  /// Replaces the runner's filter for this task when set; like any filter,
  /// it extends the default one.
  failure_filter is_failure = nullptr;
  /// True (the default): the handler may block (database calls, sleeps,
  /// long computations) and runs on a thread of its own. False: it never
  /// blocks and returns quickly, so the runtime runs it on the actor
  /// scheduler and saves two thread switches per attempt (like an async
  /// handler on an event loop). A blocking handler marked false stalls the
  /// runtime. Such a handler's `checkpoint(cp)` and `keep_alive()` are
  /// refused (`errc::invalid_argument`): they would wait for the database on
  /// a scheduler thread; `checkpoint(tx, cp)` and `complete(tx)` work.
  bool blocking = true;
  /// True: the handler runs in a worker process that the runner starts and
  /// supervises (process isolation, see cafmq/actors/isolation.hpp). A
  /// handler that aborts or segfaults kills only that process: its attempt
  /// fails at once with the signal recorded, and the process is started
  /// again. Such a handler has no database of its own: it cannot complete
  /// or checkpoint in its own transaction.
  bool isolated = false;
  /// Makes it a periodic task: every runner that holds this definition
  /// registers the schedule (named after the task, spawning it with its
  /// defaults and `schedule_payload`) when it starts, and fires its ticks,
  /// each once across all runners.
  std::optional<periodic> schedule = std::nullopt;
  /// The JSON payload of each scheduled tick; none when empty.
  std::string schedule_payload = {};

  /// A builder for one task of this definition, with its defaults applied.
  spawn_builder builder() const {
    return spawn_builder{name, defaults};
  }
};

/// Task definitions by name; a runner claims only the names it holds.
class registry {
public:
  registry() = default;

  /// Builds a registry; `errc::invalid_name` for an empty or repeated name.
  static caf::expected<registry> make(std::vector<task_definition> xs);

  /// Adds a definition: `errc::invalid_name` for a bad or repeated name,
  /// `errc::invalid_argument` for a missing handler.
  caf::error add(task_definition x);

  /// Declares a task by its name and defaults alone, without a handler: for
  /// `runner_config::remote_tasks`, whose handlers run on worker nodes
  /// (the runner only spawns by name and claims). A runner refuses such a
  /// declaration in `runner_config::tasks`. `errc::invalid_name` for a bad
  /// or repeated name.
  caf::error declare(std::string name, task_options defaults = {});

  /// Returns the definition of `name`, or nullptr.
  const task_definition* find(const std::string& name) const;

  /// The names held, sorted.
  std::vector<std::string> names() const;

  /// True while no definition is held.
  bool empty() const noexcept {
    return defs_.empty();
  }

private:
  caf::error insert(task_definition x);

  std::map<std::string, task_definition> defs_;
};

} // namespace cafmq
