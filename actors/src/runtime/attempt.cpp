// SPDX-License-Identifier: BSD-3-Clause
#include "runtime/attempt.hpp"

#include <caf/all.hpp>

#include "cafmq/current_task.hpp"
#include "cafmq/error.hpp"

namespace cafmq::actors {

namespace {

/// Writes of a running handler: completion is recorded by the runtime when
/// the handler returns (batched by the completer); checkpoints and manual
/// keep-alives go to the database actor and wait for it, at most `timeout`.
/// It holds the database actor weakly: a detached actor's thread waits
/// until nothing holds the actor, and a handler left running at a stop
/// must not keep the actor system's destructor waiting.
class runtime_backend : public attempt_backend {
public:
  runtime_backend(caf::actor_system& sys, caf::weak_actor_ptr db,
                  caf::timespan timeout, std::shared_ptr<executor::gate> gate)
    : sys_(sys), db_(std::move(db)), timeout_(timeout), gate_(std::move(gate)) {
    // nop
  }

  caf::error complete(const attempt_ref&, const std::string&) override {
    return caf::none;
  }

  caf::error checkpoint(const attempt_ref& x,
                        const cafmq::checkpoint& cp) override {
    auto open = enter();
    auto db = database();
    if ((gate_ && !open) || !db)
      return abandoned(x);
    caf::error result;
    caf::scoped_actor self{sys_};
    self->request(db, timeout_, checkpt_atom::value, x, cp)
      .receive([](bool) {}, [&](caf::error& err) { result = std::move(err); });
    return result;
  }

  caf::error keep_alive(const attempt_ref& x,
                        std::chrono::microseconds lease) override {
    auto open = enter();
    auto db = database();
    if ((gate_ && !open) || !db)
      return abandoned(x);
    caf::error result;
    caf::scoped_actor self{sys_};
    self
      ->request(db, timeout_, renew_atom::value, std::vector<attempt_ref>{x},
                caf::timespan{lease})
      .receive(
        [&](const std::vector<lease_state>& owned) {
          if (!renewed_one(owned))
            result = stale_attempt_error(x);
        },
        [&](caf::error& err) { result = std::move(err); });
    return result;
  }

private:
  database_actor database() const {
    return caf::actor_cast<database_actor>(db_.lock());
  }

  std::shared_lock<std::shared_mutex> enter() {
    return gate_ ? gate_->enter() : std::shared_lock<std::shared_mutex>{};
  }

  // The runtime stopped without waiting for this handler.
  static caf::error abandoned(const attempt_ref& x) {
    return make_error(errc::stale_attempt,
                      "attempt " + std::to_string(x.attempt) + " of task "
                        + to_string(x.id)
                        + " is not current: the runtime stopped and handed "
                          "it back");
  }

  caf::actor_system& sys_;
  caf::weak_actor_ptr db_;
  caf::timespan timeout_;
  std::shared_ptr<executor::gate> gate_;
};

class scheduler_backend : public attempt_backend {
public:
  explicit scheduler_backend(std::string task) : task_(std::move(task)) {
    // nop
  }

  caf::error complete(const attempt_ref&, const std::string&) override {
    return caf::none;
  }

  caf::error checkpoint(const attempt_ref&, const cafmq::checkpoint&) override {
    return refused("checkpoint(cp)");
  }

  caf::error keep_alive(const attempt_ref&,
                        std::chrono::microseconds) override {
    return refused("keep_alive()");
  }

private:
  caf::error refused(const char* what) const {
    return make_error(errc::invalid_argument,
                      "task " + task_ + " is non-blocking (it runs on a "
                        + "scheduler thread): " + what
                        + " would block that thread while it waits for the "
                          "database; checkpoint in the handler's own "
                          "transaction (checkpoint(tx, cp)), or make the "
                          "task blocking");
  }

  std::string task_;
};

} // namespace

std::shared_ptr<attempt_backend> nonblocking_backend(const std::string& task) {
  return std::make_shared<scheduler_backend>(task);
}

task_outcome run_attempt(const registry& tasks, const failure_filter& filter,
                         caf::actor_system& sys, const caf::weak_actor_ptr& db,
                         caf::timespan timeout, const claimed_task& data,
                         const std::shared_ptr<cancellation>& token,
                         std::shared_ptr<executor::gate> gate) {
  return run_attempt(
    tasks, filter,
    std::make_shared<runtime_backend>(sys, db, timeout, std::move(gate)), data,
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

void arm_timeout(const claimed_task& task, const channel_actor& owner) {
  arm_timeout(attempt_ref{task.id, task.attempt}, task.timeout, owner);
}

void arm_timeout(const attempt_ref& ref,
                 const std::optional<std::chrono::microseconds>& timeout,
                 const channel_actor& owner) {
  if (timeout)
    caf::delayed_anon_send(owner, *timeout, deadline_atom::value, ref,
                           cancel_reason::timeout);
}

} // namespace cafmq::actors
