// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/schedule.hpp"

#include <pqxx/pqxx>

#include "cafmq/cron.hpp"
#include "cafmq/detail/spawn_access.hpp"
#include "cafmq/error.hpp"
#include "cafmq/sql.hpp"

#include "sql_util.hpp"
#include "transaction.hpp"

namespace cafmq {

const char* to_string(catch_up_policy x) noexcept {
  switch (x) {
    case catch_up_policy::skip:
      return "skip";
    case catch_up_policy::all:
      return "all";
    case catch_up_policy::once:
    default:
      return "once";
  }
}

std::optional<catch_up_policy> parse_catch_up_policy(std::string_view str) {
  for (auto x :
       {catch_up_policy::skip, catch_up_policy::once, catch_up_policy::all})
    if (str == to_string(x))
      return x;
  return std::nullopt;
}

namespace {

// -- wall-clock arithmetic (for interval schedules, whose zone is UTC) -------

// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
std::int64_t days_from_civil(std::int64_t y, int m, int d) {
  y -= m <= 2;
  auto era = (y >= 0 ? y : y - 399) / 400;
  auto yoe = y - era * 400;
  auto doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  auto doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

std::int64_t to_seconds(const local_time& t) {
  return days_from_civil(t.year, t.month, t.day) * 86400 + t.hour * 3600
         + t.minute * 60 + t.second;
}

local_time from_seconds(std::int64_t s) {
  auto days = s >= 0 ? s / 86400 : (s - 86399) / 86400;
  auto rest = s - days * 86400;
  auto z = days + 719468;
  auto era = (z >= 0 ? z : z - 146096) / 146097;
  auto doe = z - era * 146097;
  auto yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  auto doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  auto mp = (5 * doy + 2) / 153;
  local_time t;
  t.day = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  t.month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  t.year = static_cast<int>(yoe + era * 400 + (t.month <= 2));
  t.hour = static_cast<int>(rest / 3600);
  t.minute = static_cast<int>(rest % 3600 / 60);
  t.second = static_cast<int>(rest % 60);
  return t;
}

// -- firing -----------------------------------------------------------------

// The ticks of one schedule: a cron expression or an interval.
class ticker {
public:
  explicit ticker(std::optional<cron_expression> cron, std::int64_t every)
    : cron_(std::move(cron)), every_(every) {
    // nop
  }

  // The first tick after t; nullopt when there is none.
  std::optional<local_time> next(const local_time& t) const {
    if (cron_)
      return cron_->next_after(t);
    auto s = to_seconds(t);
    return from_seconds((s / every_ + 1) * every_);
  }

  // Ticks from `t` (a tick) before `bound`, with nothing kept: how many.
  // Jumps over them for an interval; walks a cron expression, up to a
  // bound of steps (then jumps, and the count is a floor).
  std::int64_t skip(std::optional<local_time>& t, const local_time& bound) {
    if (!t || !(*t < bound))
      return 0;
    if (!cron_) {
      auto from = to_seconds(*t);
      auto n = (to_seconds(bound) - from + every_ - 1) / every_;
      t = from_seconds(from + n * every_);
      return n;
    }
    std::int64_t n = 0;
    for (; t && *t < bound && n < max_steps; ++n)
      t = cron_->next_after(*t);
    if (t && *t < bound) {
      local_time before = from_seconds(to_seconds(bound) - 1);
      t = cron_->next_after(before);
    }
    return n;
  }

  static constexpr std::int64_t max_steps = 1000000;

private:
  std::optional<cron_expression> cron_;
  std::int64_t every_;
};

// The ticks to spawn for one due schedule, its next tick and the ticks
// dropped, by its catch-up policy.
struct firing {
  std::vector<local_time> ticks;
  std::optional<local_time> next;
  std::int64_t missed = 0;
};

firing plan(ticker& tk, catch_up_policy policy, int limit,
            const local_time& first, const local_time& now,
            const local_time& late) {
  firing result;
  std::optional<local_time> t = first;
  if (*t < late) {
    // Missed: no runner fired these in time.
    switch (policy) {
      case catch_up_policy::skip:
        break;
      case catch_up_policy::once:
        result.ticks.push_back(*t);
        t = tk.next(*t);
        break;
      case catch_up_policy::all:
        while (t && *t < late
               && result.ticks.size() < static_cast<size_t>(limit)) {
          result.ticks.push_back(*t);
          t = tk.next(*t);
        }
        break;
    }
    result.missed = tk.skip(t, late);
  }
  // On time: every tick up to now. At most grace / period of them, bounded
  // anyway.
  while (t && !(now < *t) && result.ticks.size() < 100000) {
    result.ticks.push_back(*t);
    t = tk.next(*t);
  }
  result.next = t;
  return result;
}

std::string timestamp_array(const std::vector<local_time>& xs) {
  std::vector<std::string> strs;
  strs.reserve(xs.size());
  for (auto& x : xs)
    strs.push_back(x.to_string());
  return detail::text_array(strs);
}

// Fires one locked, due schedule; false when it cannot be fired (recorded).
bool fire_one(pqxx::transaction_base& tx, const pqxx::row& row,
              fire_result& out) {
  auto name = row["name"].as<std::string>();
  auto fail = [&](const std::string& why) {
    tx.exec_params(sql::schedule_failed, name, why);
    ++out.failed;
    out.errors.push_back(name + ": " + why);
    return false;
  };
  std::optional<cron_expression> cron;
  std::int64_t every = 0;
  if (!row["cron"].is_null()) {
    auto x = cron_expression::parse(row["cron"].c_str());
    if (!x)
      return fail(render(x.error()));
    cron = std::move(*x);
  } else {
    every = row["every_s"].as<std::int64_t>();
  }
  auto first = local_time::parse(row["next_local"].c_str());
  auto now = local_time::parse(row["now_local"].c_str());
  auto late = local_time::parse(row["late_local"].c_str());
  if (!first || !now || !late)
    return fail("cannot read the schedule's times (next "
                + std::string{row["next_local"].c_str()} + ", now "
                + row["now_local"].c_str() + ", late "
                + row["late_local"].c_str() + ")");
  auto policy = parse_catch_up_policy(row["catch_up"].c_str())
                  .value_or(catch_up_policy::once);
  ticker tk{std::move(cron), every};
  auto x
    = plan(tk, policy, row["catch_up_limit"].as<int>(), *first, *now, *late);
  if (!x.next)
    return fail("the cron expression matches no time in the next 8 years");
  auto spawned
    = tx.exec_params1(sql::schedule_fire, name, timestamp_array(x.ticks),
                      x.next->to_string(), x.missed)[0]
        .as<int>();
  ++out.schedules;
  out.spawned += spawned;
  out.missed += x.missed;
  return true;
}

// -- adding -----------------------------------------------------------------

// The spawn spec a schedule stores: the task's, without an id.
caf::expected<std::string> schedule_spec_json(const spawn_builder& task) {
  if (auto err = task.validate())
    return err;
  auto spec = detail::spawn_access::to_spec(task);
  for (auto key : {"run_at_us", "deadline_us", "commit_us", "unique_key"})
    if (spec.contains(key))
      return make_error(errc::invalid_argument,
                        std::string{"a schedule's task may not set "}
                          + (std::string_view{key} == "run_at_us" ? "a run-at "
                                                                    "time"
                             : std::string_view{key} == "deadline_us"
                               ? "a deadline"
                             : std::string_view{key} == "commit_us"
                               ? "a commit interval"
                               : "a unique key (each tick has its own)"));
  spec.erase("id");
  return spec.dump();
}

} // namespace

caf::error validate(const periodic& x) {
  if (x.cron.empty() == !x.every)
    return make_error(errc::invalid_argument,
                      "a schedule needs either a cron expression or an "
                      "interval");
  if (x.every && x.every->count() < 1)
    return make_error(errc::invalid_argument,
                      "a schedule's interval must be at least 1s");
  if (x.every && x.time_zone != "UTC")
    return make_error(errc::invalid_argument,
                      "a time zone applies to cron schedules only; an "
                      "interval counts from the Unix epoch");
  if (x.catch_up_limit < 1)
    return make_error(errc::invalid_argument,
                      "catch_up_limit must be at least 1");
  if (x.grace.count() < 0)
    return make_error(errc::invalid_argument, "grace must not be negative");
  if (auto err = detail::check_name("time zone", x.time_zone, 255, false))
    return err;
  if (!x.cron.empty()) {
    auto parsed = cron_expression::parse(x.cron);
    if (!parsed)
      return std::move(parsed.error());
    // A date that never comes (April 31) matches nothing. Anything that
    // matches at all does so within 8 years of any start (February 29).
    if (!parsed->next_after(local_time{2000, 1, 1, 0, 0, 0}))
      return make_error(errc::invalid_argument,
                        "cron expression \"" + x.cron
                          + "\" matches no time in the next 8 years");
  }
  return caf::none;
}

caf::error add_schedule(pqxx::connection_base& conn, const schedule_spec& x) {
  if (auto err = detail::check_name("schedule name", x.name, 255, false))
    return err;
  if (auto err = validate(x.when))
    return err;
  std::optional<cron_expression> cron;
  if (!x.when.cron.empty()) {
    auto parsed = cron_expression::parse(x.when.cron);
    if (!parsed)
      return std::move(parsed.error());
    cron = std::move(*parsed);
  }
  auto spec = schedule_spec_json(x.task);
  if (!spec)
    return std::move(spec.error());
  auto result = detail::in_transaction(
    conn, [&](pqxx::transaction_base& tx) -> caf::expected<bool> {
      // Also checks the zone: PostgreSQL knows it or raises 22023.
      auto now = local_time::parse(
        tx.exec_params1(sql::schedule_local_now, x.when.time_zone)[0].c_str());
      if (!now)
        return std::move(now.error());
      std::optional<std::string> next;
      std::optional<std::int64_t> every;
      if (cron) {
        auto t = cron->next_after(*now);
        if (!t)
          return make_error(errc::invalid_argument,
                            "cron expression \"" + x.when.cron
                              + "\" matches no time in the next 8 years");
        next = t->to_string();
      } else {
        every = x.when.every->count();
      }
      std::optional<std::string> cron_text;
      if (cron)
        cron_text = cron->text();
      tx.exec_params(sql::schedule_add, x.name, *spec, cron_text, every,
                     x.when.time_zone, to_string(x.when.catch_up),
                     x.when.catch_up_limit, x.when.grace.count(), next);
      return true;
    });
  return result ? caf::error{} : std::move(result.error());
}

caf::expected<bool> remove_schedule(pqxx::connection_base& conn,
                                    const std::string& name) {
  return detail::in_transaction(
    conn, [&](pqxx::transaction_base& tx) -> caf::expected<bool> {
      return tx.exec_params(sql::schedule_remove, name).affected_rows() > 0;
    });
}

caf::expected<std::vector<schedule_info>>
list_schedules(pqxx::connection_base& conn) {
  return guarded([&]() -> caf::expected<std::vector<schedule_info>> {
    pqxx::read_transaction tx{conn};
    std::vector<schedule_info> result;
    for (const auto& row : tx.exec(sql::schedules)) {
      schedule_info x;
      x.name = row["name"].c_str();
      x.task_name = row["task_name"].is_null() ? "" : row["task_name"].c_str();
      if (!row["cron"].is_null())
        x.cron = row["cron"].c_str();
      if (!row["every_s"].is_null())
        x.every = std::chrono::seconds{row["every_s"].as<std::int64_t>()};
      x.time_zone = row["time_zone"].c_str();
      x.catch_up = parse_catch_up_policy(row["catch_up"].c_str())
                     .value_or(catch_up_policy::once);
      x.catch_up_limit = row["catch_up_limit"].as<int>();
      x.grace = std::chrono::seconds{row["grace_s"].as<std::int64_t>()};
      x.next_run_at = detail::to_time(row["next_us"]).value();
      x.last_tick_at = detail::to_time(row["last_tick_us"]);
      x.ticks = row["ticks"].as<std::int64_t>();
      x.missed = row["missed"].as<std::int64_t>();
      if (!row["last_error"].is_null())
        x.last_error = row["last_error"].as<std::string>();
      result.push_back(std::move(x));
    }
    return result;
  });
}

caf::expected<fire_result> fire_due_schedules(pqxx::connection_base& conn,
                                              int limit) {
  return detail::in_transaction(
    conn, [&](pqxx::transaction_base& tx) -> caf::expected<fire_result> {
      fire_result result;
      for (const auto& row : tx.exec_params(sql::schedules_due, limit))
        fire_one(tx, row, result);
      return result;
    });
}

} // namespace cafmq
