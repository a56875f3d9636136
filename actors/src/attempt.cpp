// SPDX-License-Identifier: BSD-3-Clause
#include "attempt.hpp"

#include <caf/all.hpp>

#include "cafmq/current_task.hpp"
#include "cafmq/error.hpp"

namespace cafmq::actors {

namespace {

/// Writes of a running handler: completion is recorded by the runtime when
/// the handler returns (batched by the completer); checkpoints and manual
/// keep-alives go to the database actor and wait for it, at most `timeout`.
class runtime_backend : public attempt_backend {
public:
  runtime_backend(caf::actor_system& sys, database_actor db,
                  caf::timespan timeout)
    : sys_(sys), db_(std::move(db)), timeout_(timeout) {
    // nop
  }

  caf::error complete(const attempt_ref&, const std::string&) override {
    return caf::none;
  }

  caf::error checkpoint(const attempt_ref& x,
                        const cafmq::checkpoint& cp) override {
    caf::error result;
    caf::scoped_actor self{sys_};
    self->request(db_, timeout_, checkpt_atom::value, x, cp)
      .receive([](bool) {}, [&](caf::error& err) { result = std::move(err); });
    return result;
  }

  caf::error keep_alive(const attempt_ref& x,
                        std::chrono::microseconds lease) override {
    caf::error result;
    caf::scoped_actor self{sys_};
    self
      ->request(db_, timeout_, renew_atom::value, std::vector<attempt_ref>{x},
                caf::timespan{lease})
      .receive(
        [&](const std::vector<lease_state>& owned) {
          if (owned.empty())
            result = stale_attempt_error(x);
        },
        [&](caf::error& err) { result = std::move(err); });
    return result;
  }

private:
  caf::actor_system& sys_;
  database_actor db_;
  caf::timespan timeout_;
};

} // namespace

task_outcome run_attempt(const registry& tasks, const failure_filter& filter,
                         caf::actor_system& sys, const database_actor& db,
                         caf::timespan timeout, const claimed_task& data,
                         const std::shared_ptr<cancellation>& token) {
  return run_attempt(tasks, filter,
                     std::make_shared<runtime_backend>(sys, db, timeout), data,
                     token);
}

task_outcome run_attempt(const registry& tasks, const failure_filter& filter,
                         const std::shared_ptr<attempt_backend>& backend,
                         const claimed_task& data,
                         const std::shared_ptr<cancellation>& token) {
  task_outcome result;
  result.ref = {data.id, data.attempt};
  auto def = tasks.find(data.name);
  if (def == nullptr || !def->handler) {
    // Never claimed by design (a declaration has no handler); kept as a
    // safety net.
    result.kind = task_outcome::failed;
    result.error = "no handler for task " + data.name;
    return result;
  }
  current_task task{data, backend, token};
  caf::error err;
  try {
    err = def->handler(task);
  } catch (const std::exception& e) {
    err = make_error(errc::handler_failed, e.what());
  } catch (...) {
    err = make_error(errc::handler_failed, "unknown exception");
  }
  result.result = task.result();
  return judge(result, err, backend->recorded(), *token,
               def->is_failure ? def->is_failure : filter);
}

task_outcome judge(task_outcome result, const caf::error& err, bool recorded,
                   const cancellation& token, const failure_filter& filter) {
  switch (token.reason()) {
    case cancel_reason::none:
    case cancel_reason::lost:
      break;
    case cancel_reason::cancelled:
      // Work that finished anyway counts; otherwise the task ends cancelled
      // (the database knows the cancel was requested) and is not retried.
      if (!err)
        break;
      result.kind = task_outcome::failed;
      result.error = "cancelled: " + render(err);
      result.retryable = false;
      return result;
    case cancel_reason::timeout:
    case cancel_reason::deadline: {
      // Running past the limit is a failure, whatever the handler returned.
      auto why = token.reason() == cancel_reason::timeout
                   ? "the attempt ran past its timeout"
                   : "the task ran past its deadline";
      auto failure = make_error(errc::handler_failed, why);
      result.kind = task_outcome::failed;
      result.error = render(failure);
      result.retryable = !is_definitive_failure(filter, failure);
      return result;
    }
    case cancel_reason::shutdown:
      // Interrupted by our own stop: not the task's failure. Work that
      // finished counts; otherwise the task goes back to the queue.
      if (err) {
        result.kind = task_outcome::released;
        return result;
      }
      break;
  }
  if (err) {
    result.kind = task_outcome::failed;
    result.error = render(err);
    result.retryable = !is_definitive_failure(filter, err);
  } else if (recorded) {
    result.kind = task_outcome::recorded;
  }
  return result;
}

task_outcome unstarted_outcome(const attempt_ref& ref, cancel_reason why,
                               const failure_filter& filter) {
  task_outcome outcome;
  outcome.ref = ref;
  if (why == cancel_reason::shutdown) {
    outcome.kind = task_outcome::released;
  } else if (why == cancel_reason::lost) {
    outcome.kind = task_outcome::recorded;
  } else {
    cancellation token;
    token.cancel(why);
    outcome = judge(
      outcome, make_error(errc::handler_failed, "the attempt never started"),
      false, token, filter);
  }
  return outcome;
}

} // namespace cafmq::actors
