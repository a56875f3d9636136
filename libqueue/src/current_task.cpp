// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/current_task.hpp"

#include <pqxx/pqxx>

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

caf::error current_task::complete() {
  auto err = backend_->complete(ref());
  if (!err)
    completed_ = true;
  return err;
}

caf::error current_task::complete(pqxx::transaction_base& tx) {
  if (auto err = backend_->may_write_in_transaction(ref()))
    return err;
  auto err = guarded([&]() -> caf::error {
    if (detail::complete(tx, {ref()}).empty())
      return stale_attempt_error(ref());
    tx.commit();
    return caf::none;
  });
  if (!err) {
    completed_ = true;
    backend_->completed_in_transaction(ref());
  }
  return err;
}

caf::error current_task::checkpoint(const cafmq::checkpoint& cp) {
  return backend_->checkpoint(ref(), cp);
}

caf::error current_task::checkpoint(pqxx::transaction_base& tx,
                                    const cafmq::checkpoint& cp) {
  if (auto err = backend_->may_write_in_transaction(ref()))
    return err;
  return guarded([&]() -> caf::error {
    if (!detail::checkpoint(tx, ref(), cp))
      return stale_attempt_error(ref());
    tx.commit();
    return caf::none;
  });
}

caf::error current_task::keep_alive(std::chrono::microseconds lease) {
  return backend_->keep_alive(ref(), lease);
}

} // namespace cafmq
