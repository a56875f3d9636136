// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// Running one attempt's plain-function handler and judging what it
// returned. Used by the pool for handlers on executor threads and for
// non-blocking handlers on the scheduler; the timeout, also by the router.

#include <memory>

#include <caf/fwd.hpp>

#include "cafmq/actors/detail/protocol.hpp"
#include "cafmq/registry.hpp"
#include "cafmq/task_backend.hpp"
#include "runtime/executor.hpp"

namespace cafmq::actors {

/// The outcome of an attempt from what its handler returned (`err`),
/// whether it completed in its own transaction, and its token: a cancelled
/// attempt that failed is not retried; one past its timeout or deadline
/// failed whatever it returned; one interrupted by this runner's stop that
/// failed is given back; `filter` decides what is retryable.
task_outcome judge(task_outcome result, const caf::error& err, bool recorded,
                   const cancellation& token, const failure_filter& filter);

/// Where a running handler's writes go, remembering whether it completed
/// in its own transaction (then there is nothing left to write).
class attempt_backend : public task_backend {
public:
  void completed_in_transaction(const attempt_ref&) override {
    recorded_ = true;
  }

  bool recorded() const noexcept {
    return recorded_;
  }

private:
  bool recorded_ = false;
};

/// Runs one attempt's handler on the calling thread, its writes going to
/// `backend`, and judges its outcome.
task_outcome run_attempt(const registry& tasks, const failure_filter& filter,
                         const std::shared_ptr<attempt_backend>& backend,
                         const claimed_task& data,
                         const std::shared_ptr<cancellation>& token);

/// Runs one attempt's handler on the calling thread and judges its outcome.
/// Checkpoints and keep-alives go to `db` (a database_actor, held weakly),
/// each bounded by `timeout`, and through `gate` if there is one (an
/// executor thread's): once it closed, or the actor is gone, they fail as
/// stale and leave `sys` alone.
task_outcome run_attempt(const registry& tasks, const failure_filter& filter,
                         caf::actor_system& sys, const caf::weak_actor_ptr& db,
                         caf::timespan timeout, const claimed_task& data,
                         const std::shared_ptr<cancellation>& token,
                         std::shared_ptr<executor::gate> gate = nullptr);

/// The writes of a non-blocking handler, which runs on a scheduler thread:
/// completion is recorded when it returns; `checkpoint` and `keep_alive`
/// are refused with `errc::invalid_argument` (waiting for the database
/// would block the scheduler thread), `checkpoint(tx)` and `complete(tx)`
/// in the handler's own transaction work.
std::shared_ptr<attempt_backend> nonblocking_backend(const std::string& task);

/// The outcome of an attempt that never started: a stop gives it back, a
/// lost lease leaves nothing to write, a cancel (or a limit) ends it like a
/// failed run, judged by `filter`.
task_outcome unstarted_outcome(const attempt_ref& ref, cancel_reason why,
                               const failure_filter& filter);

/// Arms the attempt's timeout, which counts from its start; the timer goes
/// to the owner, which decides what it means.
void arm_timeout(const claimed_task& task, const channel_actor& owner);

/// The same for an attempt and its task's timeout, if any.
void arm_timeout(const attempt_ref& ref,
                 const std::optional<std::chrono::microseconds>& timeout,
                 const channel_actor& owner);

} // namespace cafmq::actors
