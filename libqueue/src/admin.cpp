// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/admin.hpp"

#include <pqxx/pqxx>

#include "cafmq/error.hpp"
#include "cafmq/sql.hpp"
#include "cafmq/task_options.hpp"
#include "sql_util.hpp"
#include "transaction.hpp"

namespace cafmq {

namespace {

// The filter as the parameters $1..$5 of list_tasks.sql and the *_matching
// queries.
struct filter_params {
  std::optional<std::string> states;
  std::optional<std::string> name;
  std::optional<std::string> channel_name;
  std::optional<std::int64_t> older_us;
  std::optional<std::int64_t> newer_us;
};

filter_params to_params(const task_filter& x) {
  filter_params result;
  if (!x.states.empty()) {
    std::vector<std::string> names;
    for (auto s : x.states)
      names.push_back(to_string(s));
    result.states = detail::text_array(names);
  }
  result.name = x.name;
  result.channel_name = x.channel_name;
  if (x.older_than)
    result.older_us = x.older_than->count();
  if (x.newer_than)
    result.newer_us = x.newer_than->count();
  return result;
}

caf::error check_limit(int limit, int max) {
  if (limit < 1 || limit > max)
    return make_error(errc::invalid_argument, "limit must be 1 to "
                                                + std::to_string(max) + ", got "
                                                + std::to_string(limit));
  return caf::none;
}

retry_result to_retry_result(const pqxx::result& rows) {
  retry_result result;
  for (const auto& row : rows) {
    auto id = detail::to_uuid(row[0]);
    std::string outcome = row[1].c_str();
    if (outcome == "retried")
      result.retried.push_back(id);
    else
      result.skipped.emplace_back(id, std::move(outcome));
  }
  return result;
}

cancel_counts to_cancel_counts(const pqxx::result& rows) {
  cancel_counts result;
  for (const auto& row : rows) {
    std::string outcome = row[0].c_str();
    if (outcome == "cancelled")
      result.cancelled = row[1].as<std::int64_t>();
    else if (outcome == "requested")
      result.requested = row[1].as<std::int64_t>();
  }
  return result;
}

// Runs a bulk query (retry_matching.sql, cancel_matching.sql) for the tasks
// matching `filter`, at most `limit`, in a transaction of its own, and reads
// its rows with `read`.
template <class Read>
auto exec_matching(pqxx::connection_base& conn, const char* query,
                   const task_filter& filter, int limit, Read read)
  -> caf::expected<decltype(read(std::declval<const pqxx::result&>()))> {
  using value_type = decltype(read(std::declval<const pqxx::result&>()));
  if (auto err = check_limit(limit, 1000000))
    return err;
  auto p = to_params(filter);
  return detail::in_transaction(
    conn, [&](pqxx::transaction_base& tx) -> caf::expected<value_type> {
      return read(tx.exec_params(query, p.states, p.name, p.channel_name,
                                 p.older_us, p.newer_us, limit));
    });
}

} // namespace

caf::expected<task_page> list_tasks(pqxx::connection_base& conn,
                                    const task_filter& filter, int limit,
                                    const std::optional<uuid>& after) {
  if (auto err = check_limit(limit, 1000))
    return err;
  return guarded([&]() -> caf::expected<task_page> {
    auto p = to_params(filter);
    std::optional<std::string> cursor;
    if (after)
      cursor = to_string(*after);
    pqxx::read_transaction tx{conn};
    // One row more than the page tells whether there is a next page.
    auto rows
      = tx.exec_params(sql::list_tasks, p.states, p.name, p.channel_name,
                       p.older_us, p.newer_us, cursor, limit + 1);
    task_page result;
    for (const auto& row : rows) {
      if (static_cast<int>(result.tasks.size()) == limit) {
        result.next = result.tasks.back().id;
        break;
      }
      result.tasks.push_back(
        task_row{detail::to_uuid(row["id"]), detail::to_task_status(row)});
    }
    return result;
  });
}

caf::expected<task_detail> inspect_task(pqxx::connection_base& conn,
                                        const uuid& id) {
  return guarded([&]() -> caf::expected<task_detail> {
    pqxx::read_transaction tx{conn};
    auto rows = tx.exec_params(sql::status, detail::uuid_array({id}));
    if (rows.empty())
      return make_error(errc::unknown_task, "no task with id " + to_string(id));
    task_detail result;
    result.id = id;
    result.status = detail::to_task_status(rows[0]);
    auto more = tx.exec_params(sql::task_detail, to_string(id));
    if (more.empty()) // Pruned between the two reads.
      return make_error(errc::unknown_task, "no task with id " + to_string(id));
    const auto& row = more[0];
    result.ordered = row["ordered"].as<bool>();
    if (!row["unique_key"].is_null())
      result.unique_key = row["unique_key"].as<std::string>();
    result.lost_attempts = row["lost_attempts"].as<int>();
    result.timeout = detail::to_micros(row["timeout_us"]);
    result.deadline = detail::to_time(row["deadline_us"]);
    result.backoff = detail::to_micros(row["backoff_us"]).value();
    result.backoff_cap = detail::to_micros(row["backoff_cap_us"]).value();
    if (!row["payload_json"].is_null())
      result.payload_json = row["payload_json"].as<std::string>();
    if (!row["payload_bytes"].is_null())
      result.payload_bytes = row["payload_bytes"].as<std::int64_t>();
    if (!row["workflow_id"].is_null())
      result.workflow_id = uuid::parse(row["workflow_id"].c_str());
    for (const auto& a : tx.exec_params(sql::task_attempts, to_string(id))) {
      attempt_record x;
      x.attempt = a["attempt"].as<int>();
      x.started_at = detail::to_time(a["started_us"]).value();
      x.ended_at = detail::to_time(a["ended_us"]);
      x.outcome = a["outcome"].as<std::string>();
      if (!a["error"].is_null())
        x.error = a["error"].as<std::string>();
      if (!a["node"].is_null())
        x.node = a["node"].as<std::string>();
      if (!a["worker"].is_null())
        x.worker = a["worker"].as<std::string>();
      x.retry_at = detail::to_time(a["retry_at_us"]);
      result.attempts.push_back(std::move(x));
    }
    return result;
  });
}

caf::expected<std::vector<queue_stat>> queue_stats(pqxx::connection_base& conn,
                                                   bool finished) {
  return guarded([&]() -> caf::expected<std::vector<queue_stat>> {
    pqxx::read_transaction tx{conn};
    std::vector<queue_stat> result;
    for (const auto& row : tx.exec_params(sql::queue_stats, finished)) {
      queue_stat x;
      x.channel_name = row[0].c_str();
      x.state = parse_task_state(row[1].c_str()).value();
      x.tasks = row[2].as<std::int64_t>();
      x.ready = row[3].as<std::int64_t>();
      x.oldest_pending_age = detail::to_micros(row[4]);
      x.last_minute = row[5].as<std::int64_t>();
      result.push_back(std::move(x));
    }
    return result;
  });
}

caf::expected<queue_sample>
sample_queue(pqxx::connection_base& conn,
             const std::vector<task_status::time_point>& bounds) {
  return guarded([&]() -> caf::expected<queue_sample> {
    std::string array = "{";
    for (auto& x : bounds) {
      if (array.size() > 1)
        array += ',';
      array
        += std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(
                            x.time_since_epoch())
                            .count());
    }
    array += '}';
    pqxx::read_transaction tx{conn};
    queue_sample result;
    result.finished.resize(bounds.size());
    for (const auto& row : tx.exec_params(sql::queue_sample, array)) {
      std::string kind = row[0].c_str();
      auto n = row[3].as<std::int64_t>();
      if (kind == "clock") {
        result.at = task_status::time_point{std::chrono::microseconds{n}};
      } else if (kind == "live") {
        queue_stat x;
        x.channel_name = row[1].c_str();
        x.state = parse_task_state(row[2].c_str()).value();
        x.tasks = n;
        x.ready = row[4].as<std::int64_t>();
        x.oldest_pending_age = detail::to_micros(row[5]);
        result.live.push_back(std::move(x));
      } else {
        // Window numbers count from 1 (0: before the first bound).
        auto window = row[4].as<std::size_t>();
        if (window < 1 || window > bounds.size())
          continue;
        auto& counts = result.finished[window - 1];
        auto state = parse_task_state(row[2].c_str()).value();
        (state == task_state::completed ? counts.completed
         : state == task_state::failed  ? counts.failed
                                        : counts.cancelled)
          = n;
      }
    }
    return result;
  });
}

caf::expected<retry_result> retry(pqxx::connection_base& conn,
                                  const std::vector<uuid>& ids) {
  return detail::in_transaction(
    conn, [&](pqxx::transaction_base& tx) -> caf::expected<retry_result> {
      return to_retry_result(
        tx.exec_params(sql::retry, detail::uuid_array(ids)));
    });
}

caf::expected<retry_result> retry_matching(pqxx::connection_base& conn,
                                           const task_filter& filter,
                                           int limit) {
  return exec_matching(conn, sql::retry_matching, filter, limit,
                       to_retry_result);
}

caf::expected<cancel_counts> cancel_matching(pqxx::connection_base& conn,
                                             const task_filter& filter,
                                             int limit) {
  return exec_matching(conn, sql::cancel_matching, filter, limit,
                       to_cancel_counts);
}

caf::expected<std::vector<workflow_task>>
workflow_tasks(pqxx::connection_base& conn, const uuid& workflow) {
  return guarded([&]() -> caf::expected<std::vector<workflow_task>> {
    pqxx::nontransaction tx{conn};
    std::vector<workflow_task> result;
    for (const auto& row :
         tx.exec_params(sql::workflow_tasks, to_string(workflow))) {
      workflow_task x;
      x.id = detail::to_uuid(row[0]);
      x.name = row[1].c_str();
      x.state = parse_task_state(row[2].c_str()).value_or(task_state::pending);
      auto parents = row[3].as_array();
      for (auto item = parents.get_next();
           item.first != pqxx::array_parser::juncture::done;
           item = parents.get_next())
        if (item.first == pqxx::array_parser::juncture::string_value)
          if (auto id = uuid::parse(item.second))
            x.parents.push_back(*id);
      if (!row[4].is_null())
        x.result = row[4].c_str();
      if (!row[5].is_null())
        x.error = row[5].c_str();
      x.runs_after_failure
        = !row[6].is_null() && std::string{row[6].c_str()} == "run";
      result.push_back(std::move(x));
    }
    return result;
  });
}

caf::expected<cancel_counts> cancel_workflow(pqxx::connection_base& conn,
                                             const uuid& workflow) {
  return detail::in_transaction(
    conn, [&](pqxx::transaction_base& tx) -> caf::expected<cancel_counts> {
      tx.exec_params(sql::workflow_lock_running, to_string(workflow));
      return to_cancel_counts(
        tx.exec_params(sql::workflow_cancel, to_string(workflow)));
    });
}

caf::expected<retry_result> retry_workflow(pqxx::connection_base& conn,
                                           const uuid& workflow) {
  return detail::in_transaction(
    conn, [&](pqxx::transaction_base& tx) -> caf::expected<retry_result> {
      return to_retry_result(
        tx.exec_params(sql::workflow_retry, to_string(workflow)));
    });
}

std::string to_string(pause_kind x) {
  return x == pause_kind::channel ? "channel" : "task";
}

caf::expected<bool> pause(pqxx::connection_base& conn, pause_kind kind,
                          const std::string& value) {
  return detail::in_transaction(
    conn, [&](pqxx::transaction_base& tx) -> caf::expected<bool> {
      return tx.exec_params1(sql::pause, to_string(kind), value)[0].as<bool>();
    });
}

caf::expected<bool> resume(pqxx::connection_base& conn, pause_kind kind,
                           const std::string& value) {
  return detail::in_transaction(
    conn, [&](pqxx::transaction_base& tx) -> caf::expected<bool> {
      return tx.exec_params1(sql::resume, to_string(kind), value)[0].as<bool>();
    });
}

caf::expected<std::vector<pause_info>> pauses(pqxx::connection_base& conn) {
  return guarded([&]() -> caf::expected<std::vector<pause_info>> {
    pqxx::read_transaction tx{conn};
    std::vector<pause_info> result;
    for (const auto& row : tx.exec(sql::pauses)) {
      pause_info x;
      x.kind = std::string_view{row[0].c_str()} == "channel"
                 ? pause_kind::channel
                 : pause_kind::task;
      x.value = row[1].c_str();
      x.paused_at = detail::to_time(row[2]).value();
      result.push_back(std::move(x));
    }
    return result;
  });
}

caf::error set_channel_limit(pqxx::connection_base& conn,
                             const channel_limit& x) {
  if (auto err = detail::check_name("channel name", x.channel_name,
                                    max_name_bytes, true))
    return err;
  if (x.rate_limit.has_value() != x.rate_period.has_value())
    return make_error(errc::invalid_argument,
                      "a rate limit needs both a count and a period");
  std::optional<std::int64_t> period;
  if (x.rate_period)
    period = x.rate_period->count();
  auto result = detail::in_transaction(
    conn, [&](pqxx::transaction_base& tx) -> caf::expected<bool> {
      tx.exec_params(sql::limit_set, x.channel_name, x.max_running,
                     x.rate_limit, period);
      return true;
    });
  return result ? caf::error{} : std::move(result.error());
}

caf::expected<bool> clear_channel_limit(pqxx::connection_base& conn,
                                        const std::string& channel_name) {
  return detail::in_transaction(
    conn, [&](pqxx::transaction_base& tx) -> caf::expected<bool> {
      return tx.exec_params1(sql::limit_clear, channel_name)[0].as<bool>();
    });
}

caf::expected<std::vector<channel_limit>>
channel_limits(pqxx::connection_base& conn) {
  return guarded([&]() -> caf::expected<std::vector<channel_limit>> {
    pqxx::read_transaction tx{conn};
    std::vector<channel_limit> result;
    for (const auto& row : tx.exec(sql::limits)) {
      channel_limit x;
      x.channel_name = row["channel_name"].c_str();
      if (!row["max_running"].is_null())
        x.max_running = row["max_running"].as<int>();
      if (!row["rate_limit"].is_null()) {
        x.rate_limit = row["rate_limit"].as<int>();
        x.rate_period
          = std::chrono::microseconds{row["rate_period_us"].as<std::int64_t>()};
      }
      x.running = row["running"].as<std::int64_t>();
      x.recent_starts = row["recent_starts"].as<std::int64_t>();
      result.push_back(std::move(x));
    }
    return result;
  });
}

} // namespace cafmq
