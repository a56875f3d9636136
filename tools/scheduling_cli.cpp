// SPDX-License-Identifier: BSD-3-Clause
#include "scheduling_cli.hpp"

#include <memory>

#include <CLI/CLI.hpp>

#include "commands.hpp"

namespace cafmq::cli {

namespace {

// What the scheduling commands' options are read into.
struct scheduling_options {
  schedule_args sched;
  std::string limit_channel;
  int limit_max_running = 0;
  std::string limit_rate;
};

} // namespace

std::pair<scheduling_commands, std::function<int(const context&)>>
add_scheduling_commands(CLI::App& app) {
  auto st = std::make_shared<scheduling_options>();
  auto* schedule = app.add_subcommand(
    "schedule", "periodic tasks: list, add or remove the schedules that "
                "spawn a task per tick (cron or interval), each tick once "
                "across all runners");
  schedule->require_subcommand(1);
  auto* schedule_list
    = schedule->add_subcommand("list", "list the schedules, next ticks first");
  auto* schedule_add = schedule->add_subcommand(
    "add", "add a schedule, or replace the one of that name (its next tick "
           "stays when its timing is unchanged)");
  schedule_add->add_option("name", st->sched.name, "the schedule's name")
    ->required();
  schedule_add
    ->add_option("--task", st->sched.task, "the task each tick spawns")
    ->required();
  schedule_add->add_option("--cron", st->sched.cron,
                           "cron expression: 5 fields (minute hour "
                           "day-of-month month day-of-week), 6 with seconds "
                           "first, or @hourly, @daily...");
  schedule_add->add_option("--every", st->sched.every,
                           "or an interval in whole seconds (30s, 5m, 1h): "
                           "ticks at its multiples since the epoch");
  schedule_add
    ->add_option("--tz", st->sched.time_zone,
                 "the cron expression's time zone "
                 "(Europe/Berlin...)")
    ->capture_default_str();
  schedule_add->add_option("--payload", st->sched.payload,
                           "JSON payload of each task");
  schedule_add->add_option("--channel", st->sched.channel, "channel name");
  schedule_add->add_option("--args", st->sched.channel_args, "channel args");
  schedule_add->add_option("--priority", st->sched.priority, "task priority")
    ->capture_default_str();
  schedule_add->add_option("--retries", st->sched.retries,
                           "retries after the first attempt");
  schedule_add
    ->add_option("--catch-up", st->sched.catch_up,
                 "ticks missed by more than the grace (no runner ran): "
                 "skip, once (one task) or all (one per tick, up to "
                 "--catch-up-limit)")
    ->capture_default_str();
  schedule_add
    ->add_option("--catch-up-limit", st->sched.catch_up_limit,
                 "most missed ticks run with --catch-up all")
    ->capture_default_str();
  schedule_add
    ->add_option("--grace", st->sched.grace,
                 "a tick up to this late is on time")
    ->capture_default_str();
  auto* schedule_remove
    = schedule->add_subcommand("remove", "remove a schedule");
  schedule_remove->add_option("name", st->sched.name, "the schedule's name")
    ->required();
  auto* limit_cmd = app.add_subcommand(
    "limit", "limits of a channel name that hold across all runners: at "
             "most K running, at most N starts per period");
  limit_cmd->require_subcommand(1);
  auto* limit_list
    = limit_cmd->add_subcommand("list", "list the channel limits");
  auto* limit_set
    = limit_cmd->add_subcommand("set", "set (or replace) a channel's limits");
  limit_set->add_option("channel", st->limit_channel, "the channel name")
    ->required();
  limit_set->add_option("--max-running", st->limit_max_running,
                        "at most this many of its tasks running at once");
  limit_set->add_option("--rate", st->limit_rate,
                        "at most N starts per period: N/PERIOD (10/1s, "
                        "600/1h)");
  auto* limit_clear
    = limit_cmd->add_subcommand("clear", "remove a channel's limits");
  limit_clear->add_option("channel", st->limit_channel, "the channel name")
    ->required();
  auto run = [=](const context& ctx) -> int {
    auto* cmd = schedule->parsed() ? schedule : limit_cmd;
    if (cmd == schedule) {
      auto* sub = cmd->get_subcommands().front();
      if (sub == schedule_list)
        return schedule_list_command(ctx);
      if (sub == schedule_add)
        return schedule_add_command(ctx, st->sched);
      if (sub == schedule_remove)
        return schedule_remove_command(ctx, st->sched.name);
    }
    if (cmd == limit_cmd) {
      auto* sub = cmd->get_subcommands().front();
      if (sub == limit_list)
        return limit_list_command(ctx);
      if (sub == limit_set)
        return limit_set_command(ctx, st->limit_channel, st->limit_max_running,
                                 st->limit_rate);
      if (sub == limit_clear)
        return limit_clear_command(ctx, st->limit_channel);
    }
    return exit_usage;
  };
  return {scheduling_commands{schedule, limit_cmd}, run};
}

} // namespace cafmq::cli
