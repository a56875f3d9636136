// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/current_task.hpp"

#include <pqxx/pqxx>

#include "cafmq/task_options.hpp"

#include "statements.hpp"

namespace cafmq {

task_backend::~task_backend() {
  // nop
}

void task_backend::completed_in_transaction(const attempt_ref&) {
  // nop
}

caf::error task_backend::may_write_in_transaction(const attempt_ref&) {
  return caf::none;
}

std::string task_backend::worker() const {
  return {};
}

caf::error stale_attempt_error(const attempt_ref& x) {
  return make_error(errc::stale_attempt, "attempt " + std::to_string(x.attempt)
                                           + " of task " + to_string(x.id)
                                           + " is not current");
}

current_task::current_task(claimed_task data,
                           std::shared_ptr<task_backend> backend,
                           std::shared_ptr<cancellation> token)
  : data_(std::move(data)), backend_(std::move(backend)),
    token_(std::move(token)) {
  // nop
}

namespace {

// complete(tx) and checkpoint(tx) end the caller's transaction whatever
// they return: a failure rolls it back here, inside the call, so that the
// caller's pqxx::work is closed and its destructor never uses the
// connection again (a handler may drop a broken connection at once, and
// none of its other writes can commit without the completion).
caf::error end_transaction(pqxx::transaction_base& tx, caf::error err) {
  if (err) {
    try {
      tx.abort();
    } catch (const std::exception&) {
      // The connection is gone: the server rolled the transaction back.
    }
  }
  return err;
}

// True when a string (or key) in `x` holds a NUL character.
bool holds_nul(const nlohmann::json& x) {
  if (x.is_string())
    return x.get_ref<const std::string&>().find('\0') != std::string::npos;
  if (x.is_object()) {
    for (auto& [key, value] : x.items())
      if (key.find('\0') != std::string::npos || holds_nul(value))
        return true;
  } else if (x.is_array()) {
    for (auto& value : x)
      if (holds_nul(value))
        return true;
  }
  return false;
}

} // namespace

std::vector<parent_result> current_task::parent_results() const {
  std::vector<parent_result> result;
  if (!data_.parents_json)
    return result;
  // Written by cafmq.claim_start: an array of objects with id, name, state,
  // result (any JSON, or null) and error (text or null).
  for (const auto& x : nlohmann::json::parse(*data_.parents_json)) {
    parent_result p;
    p.id = uuid::parse(x.at("id").get<std::string>()).value_or(uuid{});
    p.name = x.at("name").get<std::string>();
    p.state = parse_task_state(x.at("state").get<std::string>())
                .value_or(task_state::cancelled);
    if (!x.at("result").is_null())
      p.result = x.at("result").dump();
    if (!x.at("error").is_null())
      p.error = x.at("error").get<std::string>();
    result.push_back(std::move(p));
  }
  return result;
}

caf::error current_task::set_raw_result(std::string json) {
  if (json.size() > payload_limit())
    return make_error(errc::payload_too_large,
                      "result has " + std::to_string(json.size())
                        + " bytes, the limit is "
                        + std::to_string(payload_limit()));
  auto parsed = nlohmann::json::parse(json, nullptr, false);
  if (parsed.is_discarded())
    return make_error(errc::invalid_json,
                      "result does not parse as JSON: " + json.substr(0, 64));
  if (holds_nul(parsed))
    return make_error(errc::invalid_json,
                      "result holds a NUL character, which PostgreSQL's "
                      "jsonb cannot store");
  result_ = std::move(json);
  return caf::none;
}

caf::error current_task::complete() {
  auto err = backend_->complete(ref(), result_);
  if (!err)
    completed_ = true;
  return err;
}

caf::error current_task::complete(pqxx::transaction_base& tx) {
  if (auto err = backend_->may_write_in_transaction(ref()))
    return end_transaction(tx, std::move(err));
  auto err = guarded([&]() -> caf::error {
    if (detail::complete(tx, {ref()}, {result_}, {backend_->worker()}).empty())
      return stale_attempt_error(ref());
    tx.commit();
    return caf::none;
  });
  if (!err) {
    completed_ = true;
    backend_->completed_in_transaction(ref());
  }
  return end_transaction(tx, std::move(err));
}

caf::error current_task::checkpoint(const cafmq::checkpoint& cp) {
  return backend_->checkpoint(ref(), cp);
}

caf::error current_task::checkpoint(pqxx::transaction_base& tx,
                                    const cafmq::checkpoint& cp) {
  if (auto err = backend_->may_write_in_transaction(ref()))
    return end_transaction(tx, std::move(err));
  return end_transaction(tx, guarded([&]() -> caf::error {
                           if (!detail::checkpoint(tx, ref(), cp))
                             return stale_attempt_error(ref());
                           tx.commit();
                           return caf::none;
                         }));
}

caf::error current_task::keep_alive(std::chrono::microseconds lease) {
  return backend_->keep_alive(ref(), lease);
}

} // namespace cafmq
