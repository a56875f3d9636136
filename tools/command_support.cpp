// SPDX-License-Identifier: BSD-3-Clause
#include "command_support.hpp"

#include <ctime>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "cafmq/client.hpp"
#include "cafmq/connection_options.hpp"
#include "cafmq/error.hpp"
#include "cafmq/migrate.hpp"
#include "cafmq/status_json.hpp"
#include "durations.hpp"

namespace cafmq::cli {

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

void print_attempts(const std::vector<attempt_record>& xs) {
  for (const auto& x : xs) {
    std::cout << "  attempt=" << x.attempt << " outcome=" << x.outcome
              << " started=" << fmt_time(x.started_at);
    if (x.ended_at)
      std::cout << " ended=" << fmt_time(*x.ended_at);
    if (x.node)
      std::cout << " node=" << *x.node;
    if (x.worker)
      std::cout << " worker=" << *x.worker;
    if (x.retry_at)
      std::cout << " retry_at=" << fmt_time(*x.retry_at);
    if (x.error)
      std::cout << " error=" << std::quoted(*x.error);
    std::cout << '\n';
  }
}

void print_cancel_counts(const context& ctx, const cancel_counts& x) {
  if (ctx.json)
    std::cout << cancel_counts_json(x).dump() << '\n';
  else
    std::cout << "cancelled " << x.cancelled << ", asked " << x.requested
              << " running to stop\n";
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
      return make_error(errc::invalid_argument, "not a task state: " + s + " ("
                                                  + task_state_names() + ")");
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
connect(const context& ctx, bool check) {
  auto conn = open_connection(ctx.url);
  if (!conn)
    return std::move(conn.error());
  if (check)
    if (auto err = check_schema(**conn))
      return err;
  return conn;
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

bool filter_args::any() const {
  return all || !states.empty() || !name.empty() || !channel.empty()
         || !older_than.empty() || !newer_than.empty();
}

} // namespace cafmq::cli
