// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// The `cafmq` commands that work on the queue's database (tools/cafmq.cpp
// parses the command line, scheduling_cli.cpp that of schedules and limits;
// by group, queue_commands.cpp, task_commands.cpp and schedule_commands.cpp
// run them, with what command_support.hpp shares). Each returns the
// process's exit code.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "cafmq/admin.hpp"

namespace pqxx {
class connection_base;
} // namespace pqxx

namespace cafmq::cli {

/// Exit codes, as `cafmq --help` documents them.
enum exit_code : int {
  exit_ok = 0,
  exit_error = 1,
  exit_usage = 2,
  exit_node_unreachable = 3,
  exit_access_denied = 4,
  exit_not_migrated = 5,
  exit_not_found = 6,
};

/// What every command shares: where the database is, how to print.
struct context {
  /// The database URL (flag, config file, then CAFMQ_DATABASE_URL).
  std::string url;
  /// Prints JSON instead of text.
  bool json = false;
  /// The finished tasks' retention from the config (`cafmq.retention`).
  std::chrono::microseconds retention{0};
};

/// Which tasks a bulk command applies to, as given on the command line.
struct filter_args {
  std::vector<std::string> states;
  std::string name;
  std::string channel;
  std::string older_than;
  std::string newer_than;
  bool all = false;

  /// Whether any filter was given (`all` included).
  bool any() const;
};

int migrate_command(const context& ctx, bool status_only);

int version_command(const context& ctx);

int status_command(const context& ctx, const std::string& id);

int watch_command(const context& ctx, const std::string& id);

int list_command(const context& ctx, const filter_args& filter, int limit,
                 const std::string& after);

int stats_command(const context& ctx, bool live_only);

int retry_command(const context& ctx, const std::vector<std::string>& ids,
                  const filter_args& filter, int limit);

int cancel_command(const context& ctx, const std::vector<std::string>& ids,
                   const filter_args& filter, int limit);

int prune_command(const context& ctx, const std::string& older_than, int batch);

/// Compacts the live table (cafmq::compact_live_table); refuses while a
/// transaction older than 5 s keeps vacuum from it.
int compact_command(const context& ctx);

/// Pauses (`pause` true) or resumes a channel name or a task name; with
/// neither given, lists the pauses in force.
int pause_command(const context& ctx, bool pause, const std::string& channel,
                  const std::string& task);

int top_command(const context& ctx, const std::string& interval,
                int iterations);

/// A schedule as given on the command line (`cafmq schedule add`).
struct schedule_args {
  std::string name;
  std::string task;
  std::string cron;
  std::string every;
  std::string time_zone = "UTC";
  std::string payload;
  std::string channel;
  std::string channel_args;
  int priority = 0;
  /// Retries after the first attempt; -1: the spawn default.
  int retries = -1;
  std::string catch_up = "once";
  int catch_up_limit = 100;
  std::string grace = "1m";
};

/// Lists the schedules.
int schedule_list_command(const context& ctx);
/// Adds or replaces a schedule.
int schedule_add_command(const context& ctx, const schedule_args& args);
/// Removes a schedule.
int schedule_remove_command(const context& ctx, const std::string& name);

/// Sets a channel's limits: `max_running` (0: none), `rate` as N/PERIOD
/// (empty: none).
int limit_set_command(const context& ctx, const std::string& channel,
                      int max_running, const std::string& rate);
/// Removes a channel's limits.
int limit_clear_command(const context& ctx, const std::string& channel);
/// Lists the channel limits.
int limit_list_command(const context& ctx);

} // namespace cafmq::cli
