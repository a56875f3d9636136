// SPDX-License-Identifier: BSD-3-Clause
#include "commands.hpp"

#include <atomic>
#include <csignal>
#include <ctime>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <unistd.h>

#include "cafmq/client.hpp"
#include "cafmq/connection_options.hpp"
#include "cafmq/error.hpp"
#include "cafmq/migrate.hpp"
#include "cafmq/schedule.hpp"
#include "cafmq/status_json.hpp"
#include "cafmq/version.hpp"
#include "durations.hpp"

namespace cafmq::cli {

namespace {

using json = nlohmann::ordered_json;
using std::chrono::microseconds;

// -- errors -------------------------------------------------------------------

int fail(const caf::error& err) {
  std::cerr << "cafmq: " << render(err) << '\n';
  switch (code_of(err)) {
    case errc::invalid_argument:
    case errc::invalid_json:
    case errc::invalid_name:
      return exit_usage;
    case errc::unknown_task:
      return exit_not_found;
    case errc::schema_too_old:
    case errc::schema_too_new:
    case errc::schema_mismatch:
      return exit_not_migrated;
    default:
      return exit_error;
  }
}

int usage(const std::string& why) {
  std::cerr << "cafmq: " << why << '\n';
  return exit_usage;
}

// -- formatting ---------------------------------------------------------------

std::string fmt_time(std::chrono::system_clock::time_point t) {
  auto secs = std::chrono::system_clock::to_time_t(t);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&secs));
  return buf;
}

json time_json(const std::optional<std::chrono::system_clock::time_point>& t) {
  return t ? json(fmt_time(*t)) : json(nullptr);
}

template <class T>
json opt_json(const std::optional<T>& x) {
  return x ? json(*x) : json(nullptr);
}

void print_status(const uuid& id, const task_status& st) {
  std::cout << "id=" << to_string(id) << " name=" << st.name
            << " state=" << to_string(st.state) << " attempt=" << st.attempt
            << "/" << st.max_attempts << " created=" << fmt_time(st.created_at);
  if (st.finished_at)
    std::cout << " finished=" << fmt_time(*st.finished_at);
  if (st.priority != 0)
    std::cout << " priority=" << st.priority;
  if (st.last_error)
    std::cout << " last_error=" << std::quoted(*st.last_error);
  if (st.result)
    std::cout << " result=" << *st.result;
  std::cout << std::endl;
}

// One line of text at most `n` characters long.
std::string clip(std::string x, size_t n) {
  for (auto& c : x)
    if (c == '\n' || c == '\r' || c == '\t')
      c = ' ';
  if (x.size() > n)
    x = x.substr(0, n - 3) + "...";
  return x;
}

// Rows of text in aligned columns, the first row a header.
void print_table(std::ostream& out,
                 const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) {
      if (widths.size() <= i)
        widths.push_back(0);
      widths[i] = std::max(widths[i], row[i].size());
    }
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      out << row[i];
      if (i + 1 < row.size())
        out << std::string(widths[i] - row[i].size() + 2, ' ');
    }
    out << '\n';
  }
}

// -- arguments ----------------------------------------------------------------

caf::expected<uuid> parse_id(const std::string& x) {
  if (auto id = uuid::parse(x))
    return *id;
  return make_error(errc::invalid_argument, "not a task id: " + x);
}

caf::expected<task_filter> to_filter(const filter_args& x) {
  task_filter result;
  for (const auto& s : x.states) {
    auto state = parse_task_state(s);
    if (!state)
      return make_error(errc::invalid_argument,
                        "not a task state: " + s
                          + " (uncommitted, pending, running, completed, "
                            "failed, cancelled)");
    result.states.push_back(*state);
  }
  if (!x.name.empty())
    result.name = x.name;
  if (!x.channel.empty())
    result.channel_name = x.channel;
  auto age = [](const std::string& flag, const std::string& text,
                std::optional<microseconds>& out) -> caf::error {
    if (text.empty())
      return caf::none;
    auto d = parse_duration(text);
    if (!d)
      return make_error(errc::invalid_argument,
                        flag + " is not a duration: " + text);
    out = std::chrono::duration_cast<microseconds>(*d);
    return caf::none;
  };
  if (auto err = age("--older-than", x.older_than, result.older_than))
    return err;
  if (auto err = age("--newer-than", x.newer_than, result.newer_than))
    return err;
  return result;
}

// The tasks of a bulk command: ids, or a filter, not both.
caf::expected<std::pair<std::vector<uuid>, task_filter>>
to_targets(const std::string& what, const std::vector<std::string>& texts,
           const filter_args& args) {
  if (texts.empty() == !args.any())
    return make_error(errc::invalid_argument,
                      what
                        + " takes task ids or a filter (--state, --name, "
                          "--channel, --older-than, --newer-than, --all), "
                          "not both");
  std::vector<uuid> ids;
  for (const auto& x : texts) {
    auto id = parse_id(x);
    if (!id)
      return std::move(id.error());
    ids.push_back(*id);
  }
  auto filter = to_filter(args);
  if (!filter)
    return std::move(filter.error());
  return std::make_pair(std::move(ids), std::move(*filter));
}

// A connection to a database that holds this binary's schema.
caf::expected<std::shared_ptr<pqxx::connection_base>>
connect(const context& ctx, bool check = true) {
  auto conn = open_connection(ctx.url);
  if (!conn)
    return std::move(conn.error());
  if (check)
    if (auto err = check_schema(**conn))
      return err;
  return conn;
}

// Runs `f` on a checked connection; errors become exit codes.
template <class F>
int with_connection(const context& ctx, F f, bool check = true) {
  auto conn = connect(ctx, check);
  if (!conn)
    return fail(conn.error());
  auto rc = guarded([&]() -> caf::expected<int> { return f(**conn); });
  return rc ? *rc : fail(rc.error());
}

// -- stats tables -------------------------------------------------------------

json to_json(const std::vector<queue_stat>& xs) {
  auto result = json::array();
  for (const auto& x : xs) {
    json row{{"channel_name", x.channel_name},
             {"state", to_string(x.state)},
             {"tasks", x.tasks}};
    if (x.state == task_state::pending) {
      row["ready"] = x.ready;
      row["oldest_pending_age_seconds"]
        = x.oldest_pending_age ? json(x.oldest_pending_age->count() / 1e6)
                               : json(nullptr);
    }
    if (is_final(x.state)) {
      row["last_minute"] = x.last_minute;
      row["per_second"] = x.last_minute / 60.0;
    }
    result.push_back(std::move(row));
  }
  return result;
}

void print_stats(std::ostream& out, const std::vector<queue_stat>& xs,
                 bool live_only) {
  std::vector<std::vector<std::string>> rows{
    {"CHANNEL", "STATE", "TASKS", "READY", "OLDEST", "LAST MIN", "PER SEC"}};
  for (const auto& x : xs) {
    auto final = is_final(x.state);
    std::ostringstream rate;
    rate << std::fixed << std::setprecision(2) << x.last_minute / 60.0;
    rows.push_back(
      {x.channel_name.empty() ? "(default)" : x.channel_name,
       to_string(x.state), final && live_only ? "-" : std::to_string(x.tasks),
       x.state == task_state::pending ? std::to_string(x.ready) : "",
       x.oldest_pending_age ? format_duration(*x.oldest_pending_age) : "",
       final ? std::to_string(x.last_minute) : "", final ? rate.str() : ""});
  }
  if (xs.empty())
    out << "no tasks\n";
  else
    print_table(out, rows);
}

std::vector<std::vector<std::string>> task_table(const task_page& page) {
  std::vector<std::vector<std::string>> rows{
    {"ID", "STATE", "NAME", "CHANNEL", "ATTEMPT", "CREATED", "LAST ERROR"}};
  for (const auto& t : page.tasks)
    rows.push_back({to_string(t.id), to_string(t.status.state),
                    clip(t.status.name, 30), clip(t.status.channel_name, 20),
                    std::to_string(t.status.attempt) + "/"
                      + std::to_string(t.status.max_attempts),
                    fmt_time(t.status.created_at),
                    clip(t.status.last_error.value_or(""), 40)});
  return rows;
}

std::atomic<bool> interrupted{false};

} // namespace

bool filter_args::any() const {
  return all || !states.empty() || !name.empty() || !channel.empty()
         || !older_than.empty() || !newer_than.empty();
}

// -- commands -----------------------------------------------------------------

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
      auto version = migrate(conn, [&](const migration_info& x) {
        steps.push_back(json{{"version", x.version}, {"name", x.name}});
        if (!ctx.json)
          std::cout << "applying " << x.version << " (" << x.name << ")"
                    << std::endl;
      });
      if (!version)
        return std::move(version.error());
      if (ctx.json)
        std::cout << json{{"version", *version}, {"applied", steps}}.dump()
                  << '\n';
      else if (steps.empty())
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

int status_command(const context& ctx, const std::string& text) {
  auto id = parse_id(text);
  if (!id)
    return fail(id.error());
  return with_connection(
    ctx, [&](pqxx::connection_base& conn) -> caf::expected<int> {
      if (ctx.json) {
        auto x = inspect_task(conn, *id);
        if (!x)
          return std::move(x.error());
        auto out = status_json(*id, x->status);
        out["payload"] = opt_json(x->payload_json);
        out["unique_key"] = opt_json(x->unique_key);
        out["ordered"] = x->ordered;
        std::cout << out.dump() << '\n';
        return exit_ok;
      }
      auto st = status(conn, *id);
      if (!st)
        return std::move(st.error());
      print_status(*id, *st);
      return exit_ok;
    });
}

int watch_command(const context& ctx, const std::string& text) {
  auto id = parse_id(text);
  if (!id)
    return fail(id.error());
  if (auto conn = connect(ctx); !conn)
    return fail(conn.error());
  auto err = watch(ctx.url, *id, [&](const task_status& st) {
    if (ctx.json)
      std::cout << status_json(*id, st).dump() << std::endl;
    else
      print_status(*id, st);
  });
  return err ? fail(err) : exit_ok;
}

int list_command(const context& ctx, const filter_args& args, int limit,
                 const std::string& after_text) {
  auto filter = to_filter(args);
  if (!filter)
    return fail(filter.error());
  std::optional<uuid> after;
  if (!after_text.empty()) {
    auto id = parse_id(after_text);
    if (!id)
      return fail(id.error());
    after = *id;
  }
  return with_connection(
    ctx, [&](pqxx::connection_base& conn) -> caf::expected<int> {
      auto page = list_tasks(conn, *filter, limit, after);
      if (!page)
        return std::move(page.error());
      if (ctx.json) {
        auto tasks = json::array();
        for (const auto& t : page->tasks)
          tasks.push_back(status_json(t.id, t.status));
        std::cout << json{{"tasks", tasks},
                          {"next", page->next ? json(to_string(*page->next))
                                              : json(nullptr)}}
                       .dump()
                  << '\n';
        return exit_ok;
      }
      if (page->tasks.empty()) {
        std::cout << "no tasks\n";
        return exit_ok;
      }
      print_table(std::cout, task_table(*page));
      if (page->next)
        std::cout << "more: add --after=" << to_string(*page->next) << '\n';
      return exit_ok;
    });
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

int retry_command(const context& ctx, const std::vector<std::string>& texts,
                  const filter_args& args, int limit) {
  auto targets = to_targets("retry", texts, args);
  if (!targets)
    return fail(targets.error());
  auto& ids = targets->first;
  auto& filter = targets->second;
  return with_connection(
    ctx, [&](pqxx::connection_base& conn) -> caf::expected<int> {
      auto r
        = ids.empty() ? retry_matching(conn, filter, limit) : retry(conn, ids);
      if (!r)
        return std::move(r.error());
      if (ctx.json) {
        auto retried = json::array();
        for (const auto& id : r->retried)
          retried.push_back(to_string(id));
        auto skipped = json::array();
        for (const auto& [id, why] : r->skipped)
          skipped.push_back(json{{"id", to_string(id)}, {"reason", why}});
        std::cout << json{{"retried", retried}, {"skipped", skipped}}.dump()
                  << '\n';
      } else {
        for (const auto& [id, why] : r->skipped)
          std::cout << "task=" << to_string(id) << " not retried: " << why
                    << '\n';
        std::cout << "retried " << r->retried.size() << '\n';
      }
      // Asked for one by id and it could not be: an error, like `cancel`.
      if (!ids.empty() && r->retried.empty())
        return r->skipped.size() == 1 && r->skipped[0].second == "unknown"
                 ? exit_not_found
                 : exit_error;
      return exit_ok;
    });
}

int cancel_command(const context& ctx, const std::vector<std::string>& texts,
                   const filter_args& args, int limit) {
  auto targets = to_targets("cancel", texts, args);
  if (!targets)
    return fail(targets.error());
  auto& ids = targets->first;
  auto& filter = targets->second;
  return with_connection(
    ctx, [&](pqxx::connection_base& conn) -> caf::expected<int> {
      if (ids.empty()) {
        auto counts = cancel_matching(conn, filter, limit);
        if (!counts)
          return std::move(counts.error());
        if (ctx.json)
          std::cout << json{{"cancelled", counts->cancelled},
                            {"requested", counts->requested}}
                         .dump()
                    << '\n';
        else
          std::cout << "cancelled " << counts->cancelled << ", asked "
                    << counts->requested << " running to stop\n";
        return exit_ok;
      }
      auto out = json::array();
      int rc = exit_ok;
      for (const auto& id : ids) {
        auto result = cancel(conn, id);
        if (!result) {
          if (ctx.json)
            out.push_back(
              json{{"id", to_string(id)}, {"error", render(result.error())}});
          else
            std::cerr << "cafmq: " << render(result.error()) << '\n';
          rc = code_of(result.error()) == errc::unknown_task ? exit_not_found
                                                             : exit_error;
          continue;
        }
        if (ctx.json)
          out.push_back(
            json{{"id", to_string(id)}, {"cancel", to_string(*result)}});
        else
          std::cout << "task=" << to_string(id)
                    << " cancel=" << to_string(*result) << std::endl;
      }
      if (ctx.json)
        std::cout << out.dump() << '\n';
      return rc;
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

// -- schedules ----------------------------------------------------------------

namespace cafmq::cli {

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
