// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// Periodic tasks: a schedule spawns one task per tick, of a cron expression
// in a time zone or of a fixed interval. Schedules live in the database
// (cafmq.schedules); every runner fires the due ones, each tick exactly
// once across all of them (under the schedule's row lock).

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "cafmq/spawn.hpp"

namespace pqxx {
class connection_base;
} // namespace pqxx

namespace cafmq {

/// What happens to the ticks that no runner fired in time (more than the
/// schedule's grace late): after a downtime, say.
enum class catch_up_policy {
  /// They are dropped; the schedule goes on with its next tick.
  skip,
  /// One task runs for all of them.
  once,
  /// One task runs per missed tick, the oldest first, at most
  /// `periodic::catch_up_limit`; the others are dropped.
  all,
};

/// "skip", "once" or "all".
const char* to_string(catch_up_policy x) noexcept;

/// Parses "skip", "once" or "all".
std::optional<catch_up_policy> parse_catch_up_policy(std::string_view str);

/// When a periodic task runs: a cron expression or an interval.
struct periodic {
  /// Five fields (minute hour day-of-month month day-of-week) or six
  /// (seconds first), or a macro such as `@hourly`; see cafmq/cron.hpp.
  /// Empty when `every` is set.
  std::string cron;
  /// A fixed interval of whole seconds, at least 1 s: ticks at the multiples
  /// of it since the Unix epoch (every 1h: at each full hour, UTC).
  std::optional<std::chrono::seconds> every;
  /// The zone the cron expression's wall-clock times are in (an IANA name,
  /// as PostgreSQL knows it: "Europe/Berlin"). Cron only.
  std::string time_zone = "UTC";
  /// What happens to ticks missed by more than `grace`.
  catch_up_policy catch_up = catch_up_policy::once;
  /// With catch_up_policy::all, the most missed ticks run per firing.
  int catch_up_limit = 100;
  /// A tick up to this late is on time: it always runs.
  std::chrono::seconds grace = std::chrono::minutes{1};

  /// A cron schedule.
  static periodic at(std::string expression, std::string zone = "UTC") {
    periodic result;
    result.cron = std::move(expression);
    result.time_zone = std::move(zone);
    return result;
  }

  /// An interval schedule.
  static periodic interval(std::chrono::seconds x) {
    periodic result;
    result.every = x;
    return result;
  }
};

/// Checks a schedule's timing without a database (the time zone is checked
/// by `add_schedule`): `errc::invalid_argument` says what is wrong.
caf::error validate(const periodic& x);

/// A schedule: its name, when it ticks and what each tick spawns.
struct schedule_spec {
  /// Unique among schedules; a task definition's schedule takes the task's
  /// name.
  std::string name;
  /// The task each tick spawns, with its payload and options. It may not set
  /// an id, a unique key (each tick has its own: `cafmq.schedule:NAME@TIME`),
  /// a run-at time, a deadline or a commit interval.
  spawn_builder task;
  /// When it ticks.
  periodic when;
};

/// A schedule as the database holds it.
struct schedule_info {
  /// Times are the database's clock.
  using time_point = std::chrono::system_clock::time_point;
  /// The schedule's name.
  std::string name;
  /// The name of the task each tick spawns.
  std::string task_name;
  /// The cron expression; empty for an interval schedule.
  std::string cron;
  /// The interval; empty for a cron schedule.
  std::optional<std::chrono::seconds> every;
  /// The cron expression's time zone.
  std::string time_zone;
  /// What happens to missed ticks.
  catch_up_policy catch_up = catch_up_policy::once;
  /// The most missed ticks run per firing with catch_up_policy::all.
  int catch_up_limit = 0;
  /// A tick up to this late is on time.
  std::chrono::seconds grace{0};
  /// The next tick.
  time_point next_run_at;
  /// The last tick that spawned a task.
  std::optional<time_point> last_tick_at;
  /// Tasks spawned in all.
  std::int64_t ticks = 0;
  /// Ticks dropped by the catch-up policy in all.
  std::int64_t missed = 0;
  /// Why the last firing failed (an expression the runner cannot read).
  std::optional<std::string> last_error;
};

/// Adds the schedule, or replaces the one of that name. A replacement keeps
/// its next tick when its timing (cron, interval, zone) is unchanged, so
/// that runners registering their task definitions at each start do not
/// move it. Errors: `errc::invalid_argument` for a bad expression, zone,
/// interval or task option, `errc::invalid_name` for a bad name.
caf::error add_schedule(pqxx::connection_base& conn, const schedule_spec& x);

/// Removes a schedule; false if there was none of that name.
caf::expected<bool> remove_schedule(pqxx::connection_base& conn,
                                    const std::string& name);

/// Every schedule, by name.
caf::expected<std::vector<schedule_info>>
list_schedules(pqxx::connection_base& conn);

/// What one firing did.
struct fire_result {
  /// Schedules fired.
  int schedules = 0;
  /// Tasks spawned.
  int spawned = 0;
  /// Ticks dropped by catch-up policies.
  std::int64_t missed = 0;
  /// Schedules that could not be fired (their last_error says why).
  int failed = 0;
  /// Why, one "NAME: REASON" per schedule that could not be fired.
  std::vector<std::string> errors;
};

/// Fires every due schedule that no other runner is firing (at most `limit`
/// of them), in one transaction: spawns its ticks and moves it to its next
/// one. Runners call this periodically; calling it from many processes at
/// once spawns each tick once.
caf::expected<fire_result> fire_due_schedules(pqxx::connection_base& conn,
                                              int limit = 100);

} // namespace cafmq
