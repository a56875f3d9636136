// SPDX-License-Identifier: BSD-3-Clause
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>
#include <nlohmann/json.hpp>

#include "cafmq/cancellation.hpp"
#include "cafmq/checkpoint.hpp"
#include "cafmq/claimed_task.hpp"
#include "cafmq/error.hpp"
#include "cafmq/task_backend.hpp"
#include "cafmq/task_status.hpp"

namespace pqxx {
class transaction_base;
} // namespace pqxx

namespace cafmq {

/// How a parent of the running task ended (see `spawn_builder::after`).
struct parent_result {
  /// The parent.
  uuid id;
  /// Its name.
  std::string name;
  /// completed, failed or cancelled.
  task_state state = task_state::completed;
  /// Its result as JSON text; empty when it stored none.
  std::string result;
  /// Its last error; empty when none.
  std::string error;
};

/// The attempt a handler runs: its data, and the fenced writes it may do.
class current_task {
public:
  /// Wraps one claimed attempt: its writes go to `backend`, and `token` is what
  /// the runtime fires to stop it. The runtime makes these; a test may make its
  /// own.
  current_task(claimed_task data, std::shared_ptr<task_backend> backend,
               std::shared_ptr<cancellation> token
               = std::make_shared<cancellation>());

  /// The task's id.
  const uuid& id() const noexcept {
    return data_.id;
  }

  /// The task's name.
  const std::string& name() const noexcept {
    return data_.name;
  }

  /// This attempt's number, 1 for the first.
  int attempt() const noexcept {
    return data_.attempt;
  }

  /// Attempts the task may have in all; this is the last when `attempt() ==
  /// max_attempts()`.
  int max_attempts() const noexcept {
    return data_.max_attempts;
  }

  /// Everything the claim returned.
  const claimed_task& data() const noexcept {
    return data_;
  }

  /// This attempt's reference, the fencing token of its writes.
  attempt_ref ref() const noexcept {
    return {data_.id, data_.attempt};
  }

  /// Decodes the JSON payload; `errc::payload_mismatch` when there is none or
  /// it does not convert to `T`.
  template <class T>
  caf::expected<T> json() const {
    if (!data_.payload_json)
      return make_error(errc::payload_mismatch, "task has no JSON payload");
    try {
      return nlohmann::json::parse(*data_.payload_json).get<T>();
    } catch (const std::exception& e) {
      return make_error(errc::payload_mismatch,
                        std::string{"cannot decode JSON payload: "} + e.what());
    }
  }

  /// The JSON payload as text, if the task has one.
  const std::optional<std::string>& raw_json() const noexcept {
    return data_.payload_json;
  }

  /// The binary payload, if the task has one.
  const std::optional<std::string>& bytes() const noexcept {
    return data_.payload_bytes;
  }

  /// How each of the task's parents ended, earliest end first; empty for a
  /// task spawned without parents. A parent's result is kept for its
  /// children whatever the history's retention.
  std::vector<parent_result> parent_results() const;

  /// Stores `x` (anything nlohmann::json converts) as the task's result. It
  /// is written with the completion, in the same statement (or the caller's
  /// transaction); `status`, `watch`, the CLI and the remote interface
  /// return it. The last one stored before completion wins. Errors:
  /// `errc::invalid_json` for what PostgreSQL cannot store (a NUL
  /// character), `errc::payload_too_large` beyond `payload_limit()`.
  template <class T>
  caf::error set_result(const T& x) {
    return set_raw_result(nlohmann::json(x).dump());
  }

  /// Stores JSON text as the result; `errc::invalid_json` when it does not
  /// parse. See `set_result`.
  caf::error set_raw_result(std::string json);

  /// The result stored so far as JSON text; empty when none.
  const std::string& result() const noexcept {
    return result_;
  }

  /// Completes this attempt, with the result stored, if any.
  caf::error complete();

  /// Completes this attempt inside `tx` and commits `tx`: the task is done
  /// exactly when the caller's other writes commit. When the attempt is no
  /// longer current, returns `errc::stale_attempt` and does not commit.
  /// Either way `tx` has ended when this returns: on an error it is rolled
  /// back (with the caller's other writes), so nothing in it can commit
  /// without the completion, and its destructor does not touch the
  /// connection again. A handler may therefore drop a broken connection
  /// right after an error, even with `tx` still in scope.
  caf::error complete(pqxx::transaction_base& tx);

  /// Saves `cp` for the next attempt.
  caf::error checkpoint(const cafmq::checkpoint& cp);

  /// Saves `cp` inside `tx` and commits `tx`; not committed when stale.
  /// Like `complete(tx)`, it ends `tx` whatever it returns.
  caf::error checkpoint(pqxx::transaction_base& tx,
                        const cafmq::checkpoint& cp);

  /// Extends the lease to at least now + `lease`.
  caf::error keep_alive(std::chrono::microseconds lease);

  /// True once the runtime asked this attempt to stop (cancel, timeout,
  /// deadline, shutdown, lost lease). Handlers should return soon after.
  bool cancelled() const noexcept {
    return token_->cancelled();
  }

  /// Why this attempt was asked to stop; `cancel_reason::none` until it is.
  cancel_reason cancelled_because() const noexcept {
    return token_->reason();
  }

  /// Runs `f` once when the attempt is asked to stop.
  void on_cancel(std::function<void()> f) {
    token_->on_cancel(std::move(f));
  }

  /// The attempt's cancellation token, e.g. for code that polls it on another
  /// thread.
  const std::shared_ptr<cancellation>& token() const noexcept {
    return token_;
  }

  /// True once `complete` succeeded through this object.
  bool completed() const noexcept {
    return completed_;
  }

private:
  claimed_task data_;
  std::shared_ptr<task_backend> backend_;
  std::shared_ptr<cancellation> token_;
  bool completed_ = false;
  std::string result_;
};

} // namespace cafmq
