// SPDX-License-Identifier: BSD-3-Clause
#include "statements.hpp"

#include <algorithm>

#include <pqxx/pqxx>

#include "cafmq/sql.hpp"
#include "sql_util.hpp"

namespace cafmq::detail {

namespace {

// The statements of the per-task path, prepared once per connection where
// it prepares statements (exec_statement); names of at most 15 bytes.
constexpr statement complete_st{"cafmq_complete", sql::complete};
constexpr statement fail_st{"cafmq_fail", sql::fail};
constexpr statement release_st{"cafmq_release", sql::release};
constexpr statement hand_back_st{"cafmq_hand_back", sql::hand_back_attempts};
constexpr statement keep_alive_st{"cafmq_keep", sql::keep_alive};
constexpr statement keep_alive_ended_st{"cafmq_keep_end",
                                        sql::keep_alive_ended};
constexpr statement checkpoint_st{"cafmq_checkpt", sql::checkpoint};
constexpr statement spawn_claimed_st{"cafmq_dispatch", sql::spawn_claimed};

std::vector<uuid> ids_of(const std::vector<attempt_ref>& xs) {
  std::vector<uuid> result;
  result.reserve(xs.size());
  for (const auto& x : xs)
    result.push_back(x.id);
  return result;
}

std::vector<int> attempts_of(const std::vector<attempt_ref>& xs) {
  std::vector<int> result;
  result.reserve(xs.size());
  for (const auto& x : xs)
    result.push_back(x.attempt);
  return result;
}

std::optional<std::string> optional_text(const pqxx::field& f) {
  if (f.is_null())
    return std::nullopt;
  return std::string{f.c_str(), f.size()};
}

// The ids in the first column of `rows`.
std::vector<uuid> ids_in(const pqxx::result& rows) {
  std::vector<uuid> result;
  result.reserve(rows.size());
  for (const auto& row : rows)
    result.push_back(to_uuid(row[0]));
  return result;
}

// Runs a fenced batch statement taking (ids, attempts); returns the ids it
// changed.
std::vector<uuid> fenced_batch(pqxx::transaction_base& tx, const statement& st,
                               const std::vector<attempt_ref>& xs) {
  return ids_in(
    exec_statement(tx, st, uuid_array(ids_of(xs)), int_array(attempts_of(xs))));
}

// An array of `xs`, or NULL when empty (a claim's "no filter").
std::optional<std::string> array_or_null(const std::vector<std::string>& xs) {
  if (xs.empty())
    return std::nullopt;
  return text_array(xs);
}

} // namespace

claim_result claim(pqxx::transaction_base& tx, const claim_request& req,
                   const claim_cursor& cursor) {
  static const std::string fair_text
    = std::string{sql::claim_columns} + sql::claim;
  static const std::string by_id_text
    = std::string{sql::claim_columns} + sql::claim_ids;
  static const statement fair{"cafmq_claim", fair_text.c_str()};
  static const statement by_id{"cafmq_claim_ids", by_id_text.c_str()};
  auto channels = array_or_null(req.channels);
  auto paused = array_or_null(req.paused);
  if (!req.ids.empty())
    return read_claim(exec_statement(
      tx, by_id, req.node, text_array(req.names), channels, paused,
      req.pickup_every, req.lease.count(), req.max_lost, uuid_array(req.ids)));
  return read_claim(exec_statement(tx, fair, req.node, text_array(req.names),
                                   channels, paused, req.pickup_every,
                                   req.lease.count(), req.max_lost, req.limit,
                                   cursor.channel_name, cursor.channel_args));
}

dispatched_spawn spawn_claimed(pqxx::transaction_base& tx,
                               const std::string& specs,
                               const claim_request& req) {
  auto rows = exec_statement(tx, spawn_claimed_st, specs, req.node,
                             text_array(req.names), array_or_null(req.channels),
                             array_or_null(req.paused), req.lease.count(),
                             req.max_lost);
  dispatched_spawn result;
  result.spawned.id = to_uuid(rows.at(0)["spawned_id"]);
  result.spawned.created = rows.at(0)["created"].as<bool>();
  result.claimed = read_claim(rows);
  return result;
}

claim_result read_claim(const pqxx::result& rows) {
  claim_result result;
  result.tasks.reserve(rows.size());
  // Column numbers looked up once: by name, libpq compares (and lower-cases
  // a copy of) the name for every field of every row.
  auto col = [&](const char* name) {
    return rows.column_number(name);
  };
  const auto id
    = col("id"),
    name = col("name"), channel_name = col("channel_name"),
    channel_args = col("channel_args"), attempt = col("attempt"),
    max_attempts = col("max_attempts"), ordered = col("ordered"),
    timeout_us = col("timeout_us"), deadline_in_us = col("deadline_in_us"),
    payload_json = col("payload_json"), payload_bytes = col("payload_bytes"),
    cursor_name = col("cursor_name"), cursor_args = col("cursor_args"),
    wait_us = col("wait_us"), pickup_us = col("pickup_us"),
    ended = col("ended"), error = col("error"), parents = col("parents"),
    workflow_id = col("workflow_id");
  for (const auto& row : rows) {
    if (row[id].is_null()) {
      result.cursor.channel_name = optional_text(row[cursor_name]);
      result.cursor.channel_args = optional_text(row[cursor_args]);
      result.wait = to_micros(row[wait_us]);
      if (result.wait && result.wait->count() < 0)
        result.wait = std::chrono::microseconds{0};
      continue;
    }
    claimed_task task;
    task.id = to_uuid(row[id]);
    task.name = row[name].c_str();
    task.channel_name = row[channel_name].c_str();
    task.channel_args = row[channel_args].c_str();
    task.attempt = row[attempt].as<int>();
    task.max_attempts = row[max_attempts].as<int>();
    task.ordered = row[ordered].as<bool>();
    if (!row[workflow_id].is_null())
      task.workflow_id = to_uuid(row[workflow_id]);
    if (!row[ended].is_null()) {
      result.ended.push_back({std::move(task), row[ended].c_str(),
                              optional_text(row[error]).value_or("")});
      continue;
    }
    task.timeout = to_micros(row[timeout_us]);
    task.deadline_in = to_micros(row[deadline_in_us]);
    task.payload_json = optional_text(row[payload_json]);
    task.payload_bytes = to_bytes(row[payload_bytes]);
    task.parents_json = optional_text(row[parents]);
    result.tasks.push_back(std::move(task));
    if (auto us = to_micros(row[pickup_us]))
      result.pickup.emplace_back(
        static_cast<std::uint32_t>(result.tasks.size() - 1),
        std::max(std::chrono::microseconds{0}, *us));
  }
  return result;
}

namespace {

// One value per attempt, NULL where `xs` has "" or none; nullopt (a NULL
// array) when every one is NULL.
std::optional<std::string> sparse_array(const std::vector<std::string>& xs,
                                        size_t n) {
  if (std::all_of(xs.begin(), xs.end(),
                  [](const std::string& x) { return x.empty(); }))
    return std::nullopt;
  std::vector<std::optional<std::string>> values;
  values.reserve(n);
  for (size_t i = 0; i < n; ++i)
    if (i < xs.size() && !xs[i].empty())
      values.emplace_back(xs[i]);
    else
      values.emplace_back();
  return optional_text_array(values);
}

} // namespace

std::vector<uuid> complete(pqxx::transaction_base& tx,
                           const std::vector<attempt_ref>& xs,
                           const std::vector<std::string>& results,
                           const std::vector<std::string>& workers) {
  return ids_in(exec_statement(
    tx, complete_st, uuid_array(ids_of(xs)), int_array(attempts_of(xs)),
    sparse_array(results, xs.size()), sparse_array(workers, xs.size())));
}

std::vector<uuid> release(pqxx::transaction_base& tx,
                          const std::vector<attempt_ref>& xs) {
  return fenced_batch(tx, release_st, xs);
}

int hand_back(pqxx::transaction_base& tx, const std::vector<attempt_ref>& xs) {
  return exec_statement(tx, hand_back_st, uuid_array(ids_of(xs)),
                        int_array(attempts_of(xs)))
    .at(0)
    .at(0)
    .as<int>();
}

std::vector<fail_result> fail(pqxx::transaction_base& tx,
                              const std::vector<attempt_failure>& xs) {
  std::vector<uuid> ids;
  std::vector<int> attempts;
  std::vector<std::string> errors;
  std::vector<bool> retryable;
  std::vector<std::string> workers;
  for (const auto& x : xs) {
    workers.push_back(x.worker);
    ids.push_back(x.ref.id);
    attempts.push_back(x.ref.attempt);
    // PostgreSQL text cannot hold NUL or invalid UTF-8; keep what it can.
    std::string error;
    for (char c : x.error)
      if (c != '\0')
        error += c;
    if (!valid_utf8(error))
      error = "(error text is not valid UTF-8)";
    errors.push_back(std::move(error));
    retryable.push_back(x.retryable);
  }
  auto rows = exec_statement(tx, fail_st, uuid_array(ids), int_array(attempts),
                             text_array(errors), bool_array(retryable),
                             sparse_array(workers, xs.size()));
  std::vector<fail_result> result;
  for (const auto& row : rows)
    result.push_back(
      {to_uuid(row[0]), row[1].c_str(),
       to_time(row[2]).value_or(std::chrono::system_clock::time_point{})});
  return result;
}

std::vector<lease_state> keep_alive(pqxx::transaction_base& tx,
                                    const std::vector<attempt_ref>& xs,
                                    std::chrono::microseconds lease) {
  auto rows = exec_statement(tx, keep_alive_st, uuid_array(ids_of(xs)),
                             int_array(attempts_of(xs)), lease.count());
  std::vector<lease_state> result;
  for (const auto& row : rows)
    result.push_back({to_uuid(row[0]), row[1].as<bool>(), false});
  if (result.size() == xs.size())
    return result;
  // Missed: lost, or written since (the renewal waited for the write's row
  // lock and then found the row finished). This statement's snapshot sees
  // that write.
  for (const auto& row :
       exec_statement(tx, keep_alive_ended_st, uuid_array(ids_of(xs)),
                      int_array(attempts_of(xs))))
    result.push_back({to_uuid(row[0]), false, true});
  return result;
}

bool checkpoint(pqxx::transaction_base& tx, const attempt_ref& x,
                const cafmq::checkpoint& cp) {
  std::optional<std::string> bytes;
  if (cp.bytes())
    bytes = base64(*cp.bytes());
  std::optional<std::int64_t> lease;
  if (cp.keep_alive())
    lease = cp.keep_alive()->count();
  auto rows = exec_statement(tx, checkpoint_st, to_string(x.id), x.attempt,
                             cp.raw_json(), bytes, cp.extra_retries(), lease);
  return rows.at(0).at(0).as<bool>();
}

} // namespace cafmq::detail
