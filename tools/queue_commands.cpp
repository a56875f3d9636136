// SPDX-License-Identifier: BSD-3-Clause
// Commands on the queue: migrate, version, stats, prune, compact, pause,
// top.
#include "commands.hpp"

#include <csignal>
#include <iomanip>
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

int migrate_command(const context& ctx, bool status_only) {
  return with_connection(
    ctx,
    [&](pqxx::connection_base& conn) -> caf::expected<int> {
      if (status_only) {
        auto xs = migration_status(conn);
        if (!xs)
          return std::move(xs.error());
        int pending = 0;
        auto out = json::array();
        for (const auto& x : *xs) {
          pending += x.applied ? 0 : 1;
          if (ctx.json)
            out.push_back(json{{"version", x.version},
                               {"name", x.name},
                               {"applied", x.applied}});
          else
            std::cout << std::setw(4) << x.version << "  "
                      << (x.applied ? "applied" : "pending") << "  " << x.name
                      << '\n';
        }
        if (ctx.json)
          std::cout << out.dump() << '\n';
        else
          std::cout << pending << " pending\n";
        return exit_ok;
      }
      auto steps = json::array();
      auto functions = json::array();
      auto version = migrate(
        conn,
        [&](const migration_info& x) {
          steps.push_back(json{{"version", x.version}, {"name", x.name}});
          if (!ctx.json)
            std::cout << "applying " << x.version << " (" << x.name << ")"
                      << std::endl;
        },
        [&](const std::string& file) {
          functions.push_back(file);
          if (!ctx.json)
            std::cout << "applying functions/" << file << std::endl;
        });
      if (!version)
        return std::move(version.error());
      if (ctx.json)
        std::cout << json{{"version", *version},
                          {"applied", steps},
                          {"functions", functions}}
                       .dump()
                  << '\n';
      else if (steps.empty() && functions.empty())
        std::cout << "schema version " << *version << ", up to date\n";
      else
        std::cout << "schema version " << *version << '\n';
      return exit_ok;
    },
    false);
}

int version_command(const context& ctx) {
  return with_connection(
    ctx,
    [&](pqxx::connection_base& conn) -> caf::expected<int> {
      auto version = schema_version(conn);
      if (!version)
        return std::move(version.error());
      if (ctx.json)
        std::cout << json{{"library", cafmq::version()},
                          {"database_schema", *version},
                          {"binary_schema", latest_schema_version()}}
                       .dump()
                  << '\n';
      else
        std::cout << "database " << *version << " binary "
                  << latest_schema_version() << '\n';
      return exit_ok;
    },
    false);
}

int stats_command(const context& ctx, bool live_only) {
  return with_connection(
    ctx, [&](pqxx::connection_base& conn) -> caf::expected<int> {
      auto xs = queue_stats(conn, !live_only);
      if (!xs)
        return std::move(xs.error());
      if (ctx.json)
        std::cout << to_json(*xs).dump() << '\n';
      else
        print_stats(std::cout, *xs, live_only);
      return exit_ok;
    });
}

int prune_command(const context& ctx, const std::string& older_than,
                  int batch) {
  auto retention = ctx.retention;
  if (!older_than.empty()) {
    auto d = parse_duration(older_than);
    if (!d)
      return usage("--older-than is not a duration: " + older_than);
    retention = std::chrono::duration_cast<microseconds>(*d);
  }
  if (batch < 1)
    return usage("--batch must be at least 1");
  return with_connection(
    ctx, [&](pqxx::connection_base& conn) -> caf::expected<int> {
      std::int64_t total = 0;
      for (;;) {
        auto n = prune(conn, retention, batch);
        if (!n)
          return std::move(n.error());
        if (*n < 0) {
          std::cerr << "cafmq: another prune is running (a runner's "
                       "maintenance); try again later\n";
          return exit_error;
        }
        total += *n;
        if (*n < batch)
          break;
      }
      if (ctx.json)
        std::cout << json{{"pruned", total},
                          {"older_than_seconds", retention.count() / 1e6}}
                       .dump()
                  << '\n';
      else
        std::cout << "pruned " << total << " finished tasks older than "
                  << format_duration(retention) << '\n';
      return exit_ok;
    });
}

int compact_command(const context& ctx) {
  return with_connection(
    ctx, [&](pqxx::connection_base& conn) -> caf::expected<int> {
      auto held = oldest_snapshot(conn);
      if (!held)
        return std::move(held.error());
      if (*held && **held >= std::chrono::seconds{5}) {
        std::cerr << "cafmq: a transaction has kept vacuum from the live "
                     "table for "
                  << format_duration(**held)
                  << ": nothing can be given back until it ends (see "
                     "pg_stat_activity)\n";
        return exit_error;
      }
      auto report = compact_live_table(conn);
      if (!report)
        return std::move(report.error());
      if (ctx.json) {
        std::cout << json{{"bytes_before", report->bytes_before},
                          {"bytes_after", report->bytes_after},
                          {"rebuilt", report->rebuilt}}
                       .dump()
                  << '\n';
      } else {
        auto mb = [](std::int64_t x) {
          return x / (1024.0 * 1024.0);
        };
        std::cout << std::fixed << std::setprecision(1)
                  << "live table: " << mb(report->bytes_before) << " MB -> "
                  << mb(report->bytes_after) << " MB; rebuilt:";
        for (const auto& x : report->rebuilt)
          std::cout << ' ' << x;
        std::cout << (report->rebuilt.empty() ? " none\n" : "\n");
      }
      return exit_ok;
    });
}

int pause_command(const context& ctx, bool on, const std::string& channel,
                  const std::string& task) {
  if (!channel.empty() && !task.empty())
    return usage("give --channel or --task, not both");
  auto kind = task.empty() ? pause_kind::channel : pause_kind::task;
  const auto& value = task.empty() ? channel : task;
  return with_connection(
    ctx, [&](pqxx::connection_base& conn) -> caf::expected<int> {
      if (channel.empty() && task.empty()) {
        if (!on)
          return make_error(errc::invalid_argument,
                            "resume takes --channel or --task");
        auto xs = pauses(conn);
        if (!xs)
          return std::move(xs.error());
        auto out = json::array();
        std::vector<std::vector<std::string>> rows{{"KIND", "NAME", "SINCE"}};
        for (const auto& x : *xs) {
          out.push_back(json{{"kind", to_string(x.kind)},
                             {"name", x.value},
                             {"paused_at", fmt_time(x.paused_at)}});
          rows.push_back({to_string(x.kind), x.value, fmt_time(x.paused_at)});
        }
        if (ctx.json)
          std::cout << out.dump() << '\n';
        else if (xs->empty())
          std::cout << "nothing is paused\n";
        else
          print_table(std::cout, rows);
        return exit_ok;
      }
      auto changed = on ? cafmq::pause(conn, kind, value)
                        : cafmq::resume(conn, kind, value);
      if (!changed)
        return std::move(changed.error());
      if (ctx.json)
        std::cout << json{{"kind", to_string(kind)},
                          {"name", value},
                          {"paused", on},
                          {"changed", *changed}}
                       .dump()
                  << '\n';
      else
        std::cout << to_string(kind) << " " << std::quoted(value)
                  << (on ? (*changed ? " paused" : " was paused already")
                         : (*changed ? " resumed" : " was not paused"))
                  << '\n';
      return exit_ok;
    });
}

int top_command(const context& ctx, const std::string& interval_text,
                int iterations) {
  auto interval = parse_duration(interval_text);
  if (!interval || interval->count() == 0)
    return usage("--interval is not a positive duration: " + interval_text);
  interrupted = false;
  auto on_signal = [](int) {
    interrupted = true;
  };
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  auto tty = isatty(STDOUT_FILENO) == 1;
  return with_connection(
    ctx, [&](pqxx::connection_base& conn) -> caf::expected<int> {
      for (int i = 0; !interrupted && (iterations == 0 || i < iterations);
           ++i) {
        if (i > 0) {
          // Sleep in small steps so that Ctrl-C ends at once.
          auto until = std::chrono::steady_clock::now() + *interval;
          while (!interrupted && std::chrono::steady_clock::now() < until)
            std::this_thread::sleep_for(std::chrono::milliseconds{50});
          if (interrupted)
            break;
        }
        auto xs = queue_stats(conn, false);
        if (!xs)
          return std::move(xs.error());
        auto page = list_tasks(conn, task_filter{}, 10);
        if (!page)
          return std::move(page.error());
        if (ctx.json) {
          auto tasks = json::array();
          for (const auto& t : page->tasks)
            tasks.push_back(status_json(t.id, t.status));
          std::cout << json{{"stats", to_json(*xs)}, {"newest", tasks}}.dump()
                    << std::endl;
          continue;
        }
        std::ostringstream screen;
        if (tty)
          screen << "\033[H\033[2J";
        screen << "cafmq top: " << fmt_time(std::chrono::system_clock::now())
               << ", every " << interval_text << " (Ctrl-C to quit)\n\n";
        print_stats(screen, *xs, true);
        screen << "\nnewest tasks:\n";
        if (page->tasks.empty())
          screen << "none\n";
        else
          print_table(screen, task_table(*page));
        std::cout << screen.str() << std::flush;
      }
      return exit_ok;
    });
}

} // namespace cafmq::cli
