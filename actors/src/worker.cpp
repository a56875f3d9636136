#include "cafmq/actors/worker.hpp"

#include <caf/all.hpp>

#include "cafmq/actors/messages.hpp"
#include "cafmq/current_task.hpp"
#include "cafmq/error.hpp"

namespace cafmq::actors {

namespace {

/// Writes of a running handler: completion is recorded by the worker when
/// the handler returns (batched by the completer); checkpoints and manual
/// keep-alives go to the database actor and wait for it.
class runtime_backend : public task_backend {
public:
  runtime_backend(caf::actor_system& sys, caf::actor db)
    : sys_(sys), db_(std::move(db)) {}

  caf::error complete(const attempt_ref&) override {
    return caf::none;
  }

  caf::error checkpoint(const attempt_ref& x,
                        const cafmq::checkpoint& cp) override {
    caf::error result;
    caf::scoped_actor self{sys_};
    self->request(db_, caf::infinite, checkpt_atom::value, x, cp)
      .receive([](bool) {}, [&](caf::error& err) { result = err; });
    return result;
  }

  caf::error keep_alive(const attempt_ref& x,
                        std::chrono::microseconds lease) override {
    caf::error result;
    caf::scoped_actor self{sys_};
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(lease);
    self
      ->request(db_, caf::infinite, renew_atom::value,
                std::vector<attempt_ref>{x}, ms)
      .receive(
        [&](const std::vector<lease_state>& owned) {
          if (owned.empty())
            result = stale_attempt_error(x);
        },
        [&](caf::error& err) { result = err; });
    return result;
  }

  void completed_in_transaction(const attempt_ref&) override {
    recorded_ = true;
  }

  /// True when the handler completed in its own transaction.
  bool recorded() const noexcept {
    return recorded_;
  }

private:
  bool recorded_ = false;
  caf::actor_system& sys_;
  caf::actor db_;
};

} // namespace

task_outcome run_attempt(const registry& tasks, const failure_filter& filter,
                         caf::actor_system& sys, const caf::actor& db,
                         const claimed_task& data,
                         const std::shared_ptr<cancellation>& token) {
  task_outcome result;
  result.ref = {data.id, data.attempt};
  auto def = tasks.find(data.name);
  if (def == nullptr) {
    // Never claimed by design; kept as a safety net.
    result.kind = task_outcome::failed;
    result.error = "no handler for task " + data.name;
    return result;
  }
  auto backend = std::make_shared<runtime_backend>(sys, db);
  current_task task{data, backend, token};
  caf::error err;
  try {
    err = def->handler(task);
  } catch (const std::exception& e) {
    err = make_error(errc::handler_failed, e.what());
  } catch (...) {
    err = make_error(errc::handler_failed, "unknown exception");
  }
  return judge(result, err, backend->recorded(), *token,
               def->is_failure ? def->is_failure : filter);
}

namespace {

struct worker_state {
  static inline const char* name = "cafmq.worker";
};

using worker_actor = caf::stateful_actor<worker_state>;

caf::behavior worker(worker_actor* self, std::shared_ptr<const registry> tasks,
                     failure_filter filter, caf::actor db, caf::actor pool) {
  return {
    [=](run_atom, const claimed_task& data,
        const std::shared_ptr<cancellation>& token) {
      auto outcome
        = run_attempt(*tasks, filter, self->system(), db, data, token);
      self->send(pool, done_atom::value, std::move(outcome));
    },
  };
}

} // namespace

task_outcome judge(task_outcome result, const caf::error& err, bool recorded,
                   const cancellation& token, const failure_filter& filter) {
  switch (token.reason()) {
    case cancel_reason::none:
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
      result.retryable = !(filter ? filter : default_is_failure)(failure);
      return result;
    }
    case cancel_reason::shutdown:
    case cancel_reason::lost:
      break;
  }
  if (err) {
    result.kind = task_outcome::failed;
    result.error = render(err);
    result.retryable = !(filter ? filter : default_is_failure)(err);
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

caf::actor spawn_worker(caf::actor_system& sys,
                        std::shared_ptr<const registry> tasks,
                        failure_filter filter, caf::actor db, caf::actor pool) {
  return sys.spawn(worker, std::move(tasks), std::move(filter), std::move(db),
                   std::move(pool));
}

} // namespace cafmq::actors
