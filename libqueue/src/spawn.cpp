// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/spawn.hpp"
#include "cafmq/detail/spawn_access.hpp"

#include <atomic>

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
      static constexpr char hex[] = "0123456789abcdef";
      out += "\\u00";
      out += hex[c >> 4];
      out += hex[c & 0xf];
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
  std::string specs = "[";
  for (const auto& x : xs) {
    if (auto err = x.validate())
      return err;
    if (specs.size() > 1)
      specs += ',';
    detail::spawn_access::write_spec(x, specs);
  }
  specs += ']';
  if (xs.empty())
    return std::vector<spawn_result>{};
  return guarded([&]() -> caf::expected<std::vector<spawn_result>> {
    auto rows = tx.exec_params(sql::spawn, specs);
    std::vector<spawn_result> result;
    result.reserve(rows.size());
    for (const auto& row : rows)
      result.push_back({detail::to_uuid(row[0]), row[1].as<bool>()});
    return result;
  });
}

caf::expected<std::vector<spawn_result>>
spawn_many(pqxx::connection_base& conn, const std::vector<spawn_builder>& xs) {
  // One statement, so its own transaction: no BEGIN and COMMIT round trips.
  return guarded([&]() -> caf::expected<std::vector<spawn_result>> {
    pqxx::nontransaction tx{conn};
    return spawn_many(tx, xs);
  });
}

} // namespace cafmq
