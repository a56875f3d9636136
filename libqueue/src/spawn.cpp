// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/spawn.hpp"
#include "cafmq/detail/hex.hpp"
#include "cafmq/detail/spawn_access.hpp"

#include <algorithm>
#include <atomic>
#include <ctime>
#include <set>
#include <tuple>
#include <utility>

#include <pqxx/pqxx>

#include "cafmq/error.hpp"
#include "cafmq/sql.hpp"
#include "sql_util.hpp"

namespace cafmq {

namespace {

std::atomic<std::size_t> payload_limit_{1024 * 1024};

std::int64_t micros_since_epoch(spawn_builder::clock::time_point x) {
  return std::chrono::duration_cast<std::chrono::microseconds>(
           x.time_since_epoch())
    .count();
}

caf::error check_duration(const char* what, std::chrono::microseconds x,
                          bool allow_zero) {
  if (x.count() < 0 || (!allow_zero && x.count() == 0))
    return make_error(errc::invalid_argument,
                      std::string{what} + " must be "
                        + (allow_zero ? "zero or more" : "positive") + ", got "
                        + std::to_string(x.count()) + " us");
  return caf::none;
}

} // namespace

const char* to_string(parent_failure x) noexcept {
  return x == parent_failure::run ? "run" : "cancel";
}

const char* to_string(retry_jitter x) noexcept {
  switch (x) {
    case retry_jitter::full:
      return "full";
    case retry_jitter::equal:
      return "equal";
    case retry_jitter::none:
      break;
  }
  return "none";
}

std::size_t payload_limit() noexcept {
  return payload_limit_.load();
}

void payload_limit(std::size_t bytes) noexcept {
  payload_limit_ = bytes;
}

spawn_builder::spawn_builder(std::string name, const task_options& defaults)
  : name_(std::move(name)), opts_(defaults) {
  // nop
}

spawn_builder& spawn_builder::id(const uuid& x) {
  id_ = x;
  return *this;
}

spawn_builder& spawn_builder::channel_name(std::string x) {
  opts_.channel_name = std::move(x);
  return *this;
}

spawn_builder& spawn_builder::channel_args(std::string x) {
  opts_.channel_args = std::move(x);
  return *this;
}

spawn_builder& spawn_builder::delay(std::chrono::microseconds x) {
  delay_ = x;
  return *this;
}

spawn_builder& spawn_builder::run_at(clock::time_point x) {
  run_at_ = x;
  return *this;
}

spawn_builder& spawn_builder::retries(int x) {
  opts_.retries = x;
  return *this;
}

spawn_builder& spawn_builder::backoff(std::chrono::microseconds initial) {
  opts_.backoff = initial;
  return *this;
}

spawn_builder& spawn_builder::backoff_cap(std::chrono::microseconds cap) {
  opts_.backoff_cap = cap;
  return *this;
}

spawn_builder& spawn_builder::jitter(retry_jitter x) {
  opts_.jitter = x;
  return *this;
}

spawn_builder& spawn_builder::ordered(bool x) {
  opts_.ordered = x;
  return *this;
}

spawn_builder& spawn_builder::after(const std::vector<uuid>& parents) {
  for (const auto& x : parents)
    if (std::find(parents_.begin(), parents_.end(), x) == parents_.end())
      parents_.push_back(x);
  return *this;
}

spawn_builder& spawn_builder::on_parent_failure(parent_failure x) {
  on_parent_failure_ = x;
  return *this;
}

spawn_builder& spawn_builder::workflow(const uuid& x) {
  workflow_ = x;
  return *this;
}

spawn_builder& spawn_builder::priority(int x) {
  opts_.priority = x;
  return *this;
}

spawn_builder& spawn_builder::commit_interval(std::chrono::microseconds x) {
  commit_interval_ = x;
  return *this;
}

spawn_builder& spawn_builder::timeout(std::chrono::microseconds x) {
  opts_.timeout = x;
  return *this;
}

spawn_builder& spawn_builder::deadline(clock::time_point x) {
  deadline_ = x;
  return *this;
}

spawn_builder& spawn_builder::unique_key(std::string x) {
  unique_key_ = std::move(x);
  return *this;
}

spawn_builder& spawn_builder::raw_json(std::string x) {
  json_ = std::move(x);
  return *this;
}

spawn_builder& spawn_builder::bytes(std::string x) {
  bytes_ = std::move(x);
  return *this;
}

caf::error spawn_builder::validate() const {
  if (auto err = detail::check_name("task name", name_, max_name_bytes, false))
    return err;
  if (auto err = detail::check_name("channel name", opts_.channel_name,
                                    max_name_bytes, true))
    return err;
  if (auto err = detail::check_name("channel args", opts_.channel_args,
                                    max_channel_args_bytes, true))
    return err;
  if (unique_key_)
    if (auto err = detail::check_name("unique key", *unique_key_,
                                      max_unique_key_bytes, false))
      return err;
  if (opts_.retries < 0 || opts_.retries > 1000000)
    return make_error(errc::invalid_argument,
                      "retries must be between 0 and 1000000, got "
                        + std::to_string(opts_.retries));
  if (opts_.priority < 0 || opts_.priority > max_priority)
    return make_error(errc::invalid_argument,
                      "priority must be between 0 and "
                        + std::to_string(max_priority) + ", got "
                        + std::to_string(opts_.priority));
  if (opts_.priority != 0 && opts_.ordered)
    return make_error(errc::invalid_argument,
                      "an ordered task runs in spawn order and takes no "
                      "priority");
  if (auto err = check_duration("backoff", opts_.backoff, true))
    return err;
  if (opts_.jitter != retry_jitter::none && opts_.jitter != retry_jitter::full
      && opts_.jitter != retry_jitter::equal)
    return make_error(errc::invalid_argument, "unknown retry jitter");
  if (opts_.backoff_cap < opts_.backoff)
    return make_error(errc::invalid_argument,
                      "backoff cap must not be below the initial backoff");
  if (delay_)
    if (auto err = check_duration("delay", *delay_, true))
      return err;
  if (delay_ && run_at_)
    return make_error(errc::invalid_argument,
                      "set either a delay or a run-at time, not both");
  if (commit_interval_)
    if (auto err = check_duration("commit interval", *commit_interval_, false))
      return err;
  if (opts_.timeout)
    if (auto err = check_duration("timeout", *opts_.timeout, false))
      return err;
  if (id_ && id_->nil())
    return make_error(errc::invalid_argument, "task id must not be nil");
  auto size = (json_ ? json_->size() : 0) + (bytes_ ? bytes_->size() : 0);
  if (size > payload_limit())
    return make_error(errc::payload_too_large,
                      "payload has " + std::to_string(size)
                        + " bytes, the limit is "
                        + std::to_string(payload_limit()));
  if (json_) {
    if (json_->find('\0') != std::string::npos)
      return make_error(errc::invalid_json, "JSON payload contains a NUL byte");
    if (!nlohmann::json::accept(*json_))
      return make_error(errc::invalid_json,
                        "JSON payload does not parse: " + json_->substr(0, 64));
  }
  return caf::none;
}

namespace {

// JSON writing for spawn specs: a batch of 20,000 is written straight into
// one string instead of through 20,000 JSON objects. Every string here was
// validated (names, keys: UTF-8 without NUL; payloads: parsed JSON).
void append_string(std::string& out, const std::string& x) {
  out += '"';
  for (unsigned char c : x) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      out += "\\u00";
      detail::append_hex(out, c);
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
}

void append_key(std::string& out, const char* key) {
  out += ",\"";
  out += key;
  out += "\":";
}

void append_int(std::string& out, const char* key, std::int64_t x) {
  append_key(out, key);
  out += std::to_string(x);
}

} // namespace

void detail::spawn_access::write_spec(const spawn_builder& x,
                                      std::string& out) {
  out += "{\"id\":\"";
  out += to_string(x.id_ ? *x.id_ : uuid::time_ordered());
  out += '"';
  append_key(out, "name");
  append_string(out, x.name_);
  append_key(out, "channel_name");
  append_string(out, x.opts_.channel_name);
  append_key(out, "channel_args");
  append_string(out, x.opts_.channel_args);
  append_key(out, "ordered");
  out += x.opts_.ordered ? "true" : "false";
  append_int(out, "max_attempts", x.opts_.retries + 1);
  append_int(out, "backoff_us", x.opts_.backoff.count());
  append_int(out, "backoff_cap_us", x.opts_.backoff_cap.count());
  if (x.opts_.jitter != retry_jitter::none) {
    append_key(out, "jitter");
    append_string(out, to_string(x.opts_.jitter));
  }
  if (x.opts_.priority != 0)
    append_int(out, "priority", x.opts_.priority);
  if (x.delay_)
    append_int(out, "delay_us", x.delay_->count());
  if (x.run_at_)
    append_int(out, "run_at_us", micros_since_epoch(*x.run_at_));
  if (x.commit_interval_)
    append_int(out, "commit_us", x.commit_interval_->count());
  if (x.opts_.timeout)
    append_int(out, "timeout_us", x.opts_.timeout->count());
  if (x.deadline_)
    append_int(out, "deadline_us", micros_since_epoch(*x.deadline_));
  if (x.unique_key_) {
    append_key(out, "unique_key");
    append_string(out, *x.unique_key_);
  }
  if (!x.parents_.empty()) {
    append_key(out, "parents");
    out += '[';
    for (std::size_t i = 0; i < x.parents_.size(); ++i) {
      out += i == 0 ? "\"" : ",\"";
      out += to_string(x.parents_[i]);
      out += '"';
    }
    out += ']';
  }
  if (x.on_parent_failure_) {
    append_key(out, "on_parent_failure");
    append_string(out, to_string(*x.on_parent_failure_));
  }
  if (x.workflow_) {
    append_key(out, "workflow_id");
    append_string(out, to_string(*x.workflow_));
  }
  if (x.json_) {
    append_key(out, "json");
    append_string(out, *x.json_);
  }
  if (x.bytes_) {
    append_key(out, "bytes");
    append_string(out, detail::base64(*x.bytes_));
  }
  out += '}';
}

namespace {

// spawn_many writes batches of at least this many tasks with COPY: below
// it, the one statement of cafmq.spawn beats COPY's four round trips
// (measured on 2 cores: 100 tasks 25-30k/s by COPY against 30-38k/s by the
// function, 500 about even, 1,000 55k against 46-53k).
constexpr std::size_t copy_threshold = 500;

// Times COPY takes as text: 1970-01-01 to 9999-12-31 (UTC).
constexpr std::int64_t max_copy_us = 253402300799999999;

bool copy_time(std::int64_t us) {
  return us >= 0 && us <= max_copy_us;
}

// `us` microseconds since the epoch as timestamptz text, in UTC.
std::string timestamp_text(std::int64_t us) {
  std::time_t secs = us / 1000000;
  std::tm t{};
  gmtime_r(&secs, &t);
  char buf[80];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02d %02d:%02d:%02d.%06d+00",
                t.tm_year + 1900, t.tm_mon + 1, t.tm_mday, t.tm_hour, t.tm_min,
                t.tm_sec, static_cast<int>(us % 1000000));
  return buf;
}

// bytea's hex form, without its leading backslash and x.
std::string hex(const std::string& bytes) {
  return detail::to_hex(bytes.data(), bytes.size());
}

std::string interval_text(std::chrono::microseconds x) {
  return std::to_string(x.count()) + " microseconds";
}

// A nullable field of a COPY row: stream_to writes a null `const char*` as
// NULL.
const char* nullable(const std::optional<std::string>& x) {
  return x ? x->c_str() : nullptr;
}

} // namespace

bool detail::spawn_access::has_chosen_ids(
  const std::vector<spawn_builder>& xs) {
  return std::any_of(xs.begin(), xs.end(),
                     [](const spawn_builder& x) { return x.id_.has_value(); });
}

void detail::spawn_access::refuse_finished_ids(
  pqxx::transaction_base& tx, const std::vector<spawn_builder>& xs) {
  std::vector<uuid> ids;
  for (const auto& x : xs)
    if (x.id_)
      ids.push_back(*x.id_);
  if (!ids.empty())
    tx.exec_params(sql::spawn_refuse_finished, detail::uuid_array(ids));
}

bool detail::spawn_access::copyable(const std::vector<spawn_builder>& xs) {
  if (xs.size() < copy_threshold)
    return false;
  for (const auto& x : xs) {
    if (x.unique_key_ || !x.parents_.empty() || x.workflow_)
      return false;
    if (x.run_at_ && !copy_time(micros_since_epoch(*x.run_at_)))
      return false;
    if (x.deadline_ && !copy_time(micros_since_epoch(*x.deadline_)))
      return false;
  }
  return true;
}

namespace {

// The live table's column defaults (migration 0022), which a COPY leaves
// to the server when every row of the batch has them (the db test
// "a COPY spawn leaves the defaults to the table" holds them to the table's).
constexpr int copy_default_max_attempts = 5;
constexpr std::chrono::microseconds copy_default_backoff
  = std::chrono::seconds{1};
constexpr std::chrono::microseconds copy_default_backoff_cap
  = std::chrono::hours{1};

} // namespace

bool detail::spawn_access::takes_defaults(const spawn_builder& x) {
  const auto& o = x.opts_;
  return !x.commit_interval_ && !o.ordered && !o.timeout
         && o.jitter == retry_jitter::none
         && o.retries + 1 == copy_default_max_attempts
         && o.backoff == copy_default_backoff
         && o.backoff_cap == copy_default_backoff_cap && !x.run_at_
         && (!x.delay_ || x.delay_->count() == 0) && !x.deadline_;
}

std::vector<spawn_result>
detail::spawn_access::copy_many(pqxx::transaction_base& tx,
                                const std::vector<spawn_builder>& xs) {
  // The ordering locks, and the transaction's now() for run_at (a delay
  // counts from it, as in cafmq.spawn) and for reservations' deadlines.
  std::set<std::pair<std::string, std::string>> ordered;
  std::set<std::string> woken;
  for (const auto& x : xs) {
    if (x.opts_.ordered)
      ordered.emplace(x.opts_.channel_name, x.opts_.channel_args);
    if (!x.commit_interval_)
      woken.insert(x.opts_.channel_name);
  }
  auto locks = nlohmann::json::array();
  for (const auto& [name, args] : ordered)
    locks.push_back({name, args});
  auto now_us = tx.exec_params1(sql::spawn_copy_begin, locks.dump())[0]
                  .as<std::int64_t>();
  std::vector<spawn_result> result;
  result.reserve(xs.size());
  // A row's id (drawn here if not chosen), recorded in the result, and its
  // bytes payload as COPY's text format writes a bytea.
  auto next_row
    = [&](const spawn_builder& x, std::optional<std::string>& bytes) {
        auto id = x.id_ ? *x.id_ : uuid::time_ordered();
        result.push_back({id, true});
        bytes.reset();
        if (x.bytes_)
          bytes = "\\x" + hex(*x.bytes_);
        return id;
      };
  if (std::all_of(xs.begin(), xs.end(), takes_defaults)) {
    pqxx::stream_to rows{
      tx, "cafmq.tasks_live",
      std::vector<std::string>{"id", "name", "channel_name", "channel_args",
                               "priority", "payload_json", "payload_bytes"}};
    std::optional<std::string> bytes;
    for (const auto& x : xs) {
      auto id = next_row(x, bytes);
      rows << std::make_tuple(to_string(id), x.name_, x.opts_.channel_name,
                              x.opts_.channel_args, x.opts_.priority,
                              nullable(x.json_), nullable(bytes));
    }
    rows.complete();
  } else {
    pqxx::stream_to rows{
      tx, "cafmq.tasks_live",
      std::vector<std::string>{"id", "name", "channel_name", "channel_args",
                               "state", "ordered", "max_attempts", "run_at",
                               "backoff", "backoff_cap", "backoff_jitter",
                               "commit_deadline", "timeout", "deadline",
                               "priority", "payload_json", "payload_bytes"}};
    std::optional<std::string> bytes;
    for (const auto& x : xs) {
      auto id = next_row(x, bytes);
      auto run_at = x.run_at_ ? micros_since_epoch(*x.run_at_)
                              : now_us + (x.delay_ ? x.delay_->count() : 0);
      std::optional<std::string> jitter;
      if (x.opts_.jitter != retry_jitter::none)
        jitter = to_string(x.opts_.jitter);
      std::optional<std::string> commit_deadline;
      if (x.commit_interval_)
        commit_deadline = timestamp_text(now_us + x.commit_interval_->count());
      std::optional<std::string> timeout;
      if (x.opts_.timeout)
        timeout = interval_text(*x.opts_.timeout);
      std::optional<std::string> deadline;
      if (x.deadline_)
        deadline = timestamp_text(micros_since_epoch(*x.deadline_));
      rows << std::make_tuple(
        to_string(id), x.name_, x.opts_.channel_name, x.opts_.channel_args,
        x.commit_interval_ ? "uncommitted" : "pending",
        x.opts_.ordered ? "t" : "f", x.opts_.retries + 1,
        timestamp_text(run_at), interval_text(x.opts_.backoff),
        interval_text(x.opts_.backoff_cap), nullable(jitter),
        nullable(commit_deadline), nullable(timeout), nullable(deadline),
        x.opts_.priority, nullable(x.json_), nullable(bytes));
    }
    rows.complete();
  }
  if (!woken.empty())
    tx.exec_params(
      sql::spawn_copy_end,
      nlohmann::json(std::vector<std::string>(woken.begin(), woken.end()))
        .dump());
  return result;
}

nlohmann::json detail::spawn_access::to_spec(const spawn_builder& x) {
  std::string out;
  write_spec(x, out);
  return nlohmann::json::parse(out);
}

caf::expected<spawn_result>
spawn_builder::spawn(pqxx::transaction_base& tx) const {
  auto result = spawn_many(tx, {*this});
  if (!result)
    return std::move(result.error());
  return result->front();
}

caf::expected<spawn_result>
spawn_builder::spawn(pqxx::connection_base& conn) const {
  auto result = spawn_many(conn, {*this});
  if (!result)
    return std::move(result.error());
  return result->front();
}

caf::expected<std::vector<spawn_result>>
spawn_many(pqxx::transaction_base& tx, const std::vector<spawn_builder>& xs) {
  for (const auto& x : xs)
    if (auto err = x.validate())
      return err;
  if (xs.empty())
    return std::vector<spawn_result>{};
  if (detail::spawn_access::copyable(xs))
    return guarded([&]() -> caf::expected<std::vector<spawn_result>> {
      auto result = detail::spawn_access::copy_many(tx, xs);
      detail::spawn_access::refuse_finished_ids(tx, xs);
      return result;
    });
  std::string specs = "[";
  for (const auto& x : xs) {
    if (specs.size() > 1)
      specs += ',';
    detail::spawn_access::write_spec(x, specs);
  }
  specs += ']';
  return guarded([&]() -> caf::expected<std::vector<spawn_result>> {
    static constexpr detail::statement st{"cafmq_spawn", sql::spawn};
    auto rows = detail::exec_statement(tx, st, specs);
    std::vector<spawn_result> result;
    result.reserve(rows.size());
    for (const auto& row : rows)
      result.push_back({detail::to_uuid(row[0]), row[1].as<bool>()});
    detail::spawn_access::refuse_finished_ids(tx, xs);
    return result;
  });
}

caf::expected<std::vector<spawn_result>>
spawn_many(pqxx::connection_base& conn, const std::vector<spawn_builder>& xs) {
  return guarded([&]() -> caf::expected<std::vector<spawn_result>> {
    if (detail::spawn_access::copyable(xs)
        || detail::spawn_access::has_chosen_ids(xs)) {
      // Several statements: one transaction holds them.
      pqxx::work tx{conn};
      auto result = spawn_many(tx, xs);
      if (result)
        tx.commit();
      return result;
    }
    // One statement, so its own transaction: no BEGIN and COMMIT round trips.
    pqxx::nontransaction tx{conn};
    return spawn_many(tx, xs);
  });
}

} // namespace cafmq
