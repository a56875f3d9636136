// SPDX-License-Identifier: BSD-3-Clause
// Commands on schedules and channel limits.
#include "commands.hpp"

#include <csignal>
#include <iostream>
#include <thread>

#include <unistd.h>

#include "cafmq/client.hpp"
#include "cafmq/connection_options.hpp"
#include "cafmq/error.hpp"
#include "cafmq/migrate.hpp"
#include "cafmq/schedule.hpp"
#include "cafmq/status_json.hpp"
#include "cafmq/version.hpp"
#include "command_support.hpp"
#include "durations.hpp"

namespace cafmq::cli {

using std::chrono::microseconds;

namespace {

std::string fmt_seconds(std::chrono::seconds x) {
  auto s = x.count();
  if (s % 86400 == 0)
    return std::to_string(s / 86400) + "d";
  if (s % 3600 == 0)
    return std::to_string(s / 3600) + "h";
  if (s % 60 == 0)
    return std::to_string(s / 60) + "m";
  return std::to_string(s) + "s";
}

// A whole number of seconds, at least `min`.
std::optional<std::chrono::seconds> parse_seconds(const std::string& text,
                                                  std::int64_t min) {
  auto d = parse_duration(text);
  if (!d)
    return std::nullopt;
  auto s = std::chrono::duration_cast<std::chrono::seconds>(*d);
  if (s != *d || s.count() < min)
    return std::nullopt;
  return s;
}

} // namespace

int schedule_list_command(const context& ctx) {
  return with_connection(
    ctx, [&](pqxx::connection_base& conn) -> caf::expected<int> {
      auto xs = list_schedules(conn);
      if (!xs)
        return std::move(xs.error());
      auto out = json::array();
      std::vector<std::vector<std::string>> rows{
        {"NAME", "TASK", "WHEN", "ZONE", "NEXT", "LAST", "TICKS", "MISSED",
         "CATCH-UP", "ERROR"}};
      for (const auto& x : *xs) {
        auto when = x.every ? "every " + fmt_seconds(*x.every) : x.cron;
        auto catch_up = std::string{to_string(x.catch_up)};
        if (x.catch_up == catch_up_policy::all)
          catch_up += " (" + std::to_string(x.catch_up_limit) + ")";
        out.push_back(json{
          {"name", x.name},
          {"task", x.task_name},
          {"cron", x.cron.empty() ? json(nullptr) : json(x.cron)},
          {"every_seconds", x.every ? json(x.every->count()) : json(nullptr)},
          {"time_zone", x.time_zone},
          {"catch_up", to_string(x.catch_up)},
          {"catch_up_limit", x.catch_up_limit},
          {"grace_seconds", x.grace.count()},
          {"next_run_at", fmt_time(x.next_run_at)},
          {"last_tick_at", time_json(x.last_tick_at)},
          {"ticks", x.ticks},
          {"missed", x.missed},
          {"last_error", opt_json(x.last_error)}});
        rows.push_back({x.name, x.task_name, when, x.time_zone,
                        fmt_time(x.next_run_at),
                        x.last_tick_at ? fmt_time(*x.last_tick_at) : "-",
                        std::to_string(x.ticks), std::to_string(x.missed),
                        catch_up, clip(x.last_error.value_or(""), 40)});
      }
      if (ctx.json)
        std::cout << out.dump() << '\n';
      else if (xs->empty())
        std::cout << "no schedules\n";
      else
        print_table(std::cout, rows);
      return exit_ok;
    });
}

int schedule_add_command(const context& ctx, const schedule_args& args) {
  if (args.cron.empty() == args.every.empty())
    return usage("give --cron or --every, not both");
  schedule_spec spec{args.name, spawn_builder{args.task}, {}};
  if (!args.cron.empty()) {
    spec.when = periodic::at(args.cron, args.time_zone);
  } else {
    auto every = parse_seconds(args.every, 1);
    if (!every)
      return usage("--every must be a whole number of seconds, at least 1s: "
                   + args.every);
    if (args.time_zone != "UTC")
      return usage("--tz applies to --cron only");
    spec.when = periodic::interval(*every);
  }
  auto policy = parse_catch_up_policy(args.catch_up);
  if (!policy)
    return usage("--catch-up takes skip, once or all, got " + args.catch_up);
  spec.when.catch_up = *policy;
  spec.when.catch_up_limit = args.catch_up_limit;
  auto grace = parse_seconds(args.grace, 0);
  if (!grace)
    return usage("--grace must be a whole number of seconds: " + args.grace);
  spec.when.grace = *grace;
  if (!args.payload.empty())
    spec.task.raw_json(args.payload);
  spec.task.channel_name(args.channel).channel_args(args.channel_args);
  spec.task.priority(args.priority);
  if (args.retries >= 0)
    spec.task.retries(args.retries);
  return with_connection(
    ctx, [&](pqxx::connection_base& conn) -> caf::expected<int> {
      if (auto err = add_schedule(conn, spec))
        return err;
      auto xs = list_schedules(conn);
      if (!xs)
        return std::move(xs.error());
      for (const auto& x : *xs)
        if (x.name == args.name) {
          if (ctx.json)
            std::cout << json{{"name", x.name},
                              {"next_run_at", fmt_time(x.next_run_at)}}
                           .dump()
                      << '\n';
          else
            std::cout << "schedule " << std::quoted(x.name)
                      << " added, next tick " << fmt_time(x.next_run_at)
                      << '\n';
        }
      return exit_ok;
    });
}

int schedule_remove_command(const context& ctx, const std::string& name) {
  return with_connection(
    ctx, [&](pqxx::connection_base& conn) -> caf::expected<int> {
      auto removed = remove_schedule(conn, name);
      if (!removed)
        return std::move(removed.error());
      if (ctx.json)
        std::cout << json{{"name", name}, {"removed", *removed}}.dump() << '\n';
      else if (*removed)
        std::cout << "schedule " << std::quoted(name) << " removed\n";
      else
        std::cerr << "cafmq: no schedule named " << std::quoted(name) << '\n';
      return *removed ? exit_ok : exit_not_found;
    });
}

// -- channel limits -----------------------------------------------------------

int limit_set_command(const context& ctx, const std::string& channel,
                      int max_running, const std::string& rate) {
  channel_limit x;
  x.channel_name = channel;
  if (max_running < 0)
    return usage("--max-running must be at least 1");
  if (max_running > 0)
    x.max_running = max_running;
  if (!rate.empty()) {
    auto slash = rate.find('/');
    std::optional<std::chrono::nanoseconds> period;
    int count = 0;
    try {
      if (slash != std::string::npos) {
        size_t used = 0;
        count = std::stoi(rate.substr(0, slash), &used);
        if (used == slash)
          period = parse_duration(rate.substr(slash + 1));
      }
    } catch (...) {
      // reported below
    }
    if (!period || period->count() <= 0 || count < 1)
      return usage("--rate takes N/PERIOD, e.g. 10/1s or 600/1h, got " + rate);
    x.rate_limit = count;
    x.rate_period = std::chrono::duration_cast<microseconds>(*period);
  }
  if (!x.max_running && !x.rate_limit)
    return usage("give --max-running, --rate or both");
  return with_connection(
    ctx, [&](pqxx::connection_base& conn) -> caf::expected<int> {
      if (auto err = set_channel_limit(conn, x))
        return err;
      if (ctx.json)
        std::cout << json{{"channel_name", channel}, {"set", true}}.dump()
                  << '\n';
      else
        std::cout << "channel " << std::quoted(channel) << " limited\n";
      return exit_ok;
    });
}

int limit_clear_command(const context& ctx, const std::string& channel) {
  return with_connection(
    ctx, [&](pqxx::connection_base& conn) -> caf::expected<int> {
      auto cleared = clear_channel_limit(conn, channel);
      if (!cleared)
        return std::move(cleared.error());
      if (ctx.json)
        std::cout
          << json{{"channel_name", channel}, {"cleared", *cleared}}.dump()
          << '\n';
      else if (*cleared)
        std::cout << "channel " << std::quoted(channel) << " unlimited\n";
      else
        std::cout << "channel " << std::quoted(channel) << " had no limits\n";
      return exit_ok;
    });
}

int limit_list_command(const context& ctx) {
  return with_connection(
    ctx, [&](pqxx::connection_base& conn) -> caf::expected<int> {
      auto xs = channel_limits(conn);
      if (!xs)
        return std::move(xs.error());
      auto out = json::array();
      std::vector<std::vector<std::string>> rows{
        {"CHANNEL", "MAX RUNNING", "RUNNING", "RATE", "STARTS IN WINDOW"}};
      for (const auto& x : *xs) {
        auto period_us = x.rate_period ? x.rate_period->count() : 0;
        std::string rate = "-";
        if (x.rate_limit) {
          std::ostringstream os;
          os << *x.rate_limit << "/" << period_us / 1e6 << "s";
          rate = os.str();
        }
        out.push_back(json{
          {"channel_name", x.channel_name},
          {"max_running", x.max_running ? json(*x.max_running) : json(nullptr)},
          {"running", x.running},
          {"rate_limit", x.rate_limit ? json(*x.rate_limit) : json(nullptr)},
          {"rate_period_seconds",
           x.rate_period ? json(period_us / 1e6) : json(nullptr)},
          {"recent_starts", x.recent_starts}});
        rows.push_back({x.channel_name,
                        x.max_running ? std::to_string(*x.max_running) : "-",
                        std::to_string(x.running), rate,
                        x.rate_limit ? std::to_string(x.recent_starts) : "-"});
      }
      if (ctx.json)
        std::cout << out.dump() << '\n';
      else if (xs->empty())
        std::cout << "no channel limits\n";
      else
        print_table(std::cout, rows);
      return exit_ok;
    });
}

} // namespace cafmq::cli
