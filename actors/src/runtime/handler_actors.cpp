// SPDX-License-Identifier: BSD-3-Clause
#include <caf/all.hpp>

#include "cafmq/error.hpp"
#include "runtime/attempt.hpp"
#include "runtime/pool_state.hpp"

namespace cafmq::actors::pool_impl {

namespace {

// The outcome of a handler actor's attempt, judged like a function's.
task_outcome judged(pool_ptr self, const attempt_ref& ref,
                    const caf::error& err) {
  task_outcome result;
  result.ref = ref;
  auto i = self->state.running->find(ref);
  if (i == self->state.running->end())
    return result;
  return judge(result, err, false, *i->second.token, *i->second.filter);
}

// Runs a handler actor's behavior with an exception handler that keeps
// the exception's text for last_error.
handler_actor::behavior_type
supervised_handler(handler_actor::pointer self,
                   actor_task_definition::behavior_fn make) {
  self->set_exception_handler(
    [](caf::scheduled_actor*, std::exception_ptr& ptr) -> caf::error {
      try {
        std::rethrow_exception(ptr);
      } catch (const std::exception& e) {
        return make_error(errc::handler_failed,
                          std::string{"handler actor threw: "} + e.what());
      } catch (...) {
        return make_error(errc::handler_failed,
                          "handler actor threw an unknown exception");
      }
    });
  return make(self);
}

} // namespace

void run_actor_handler(pool_ptr self, const actor_task_definition& def,
                       claimed_task task, channel_actor owner) {
  auto& st = self->state;
  auto handler = self->spawn<caf::monitored>(supervised_handler, def.behavior);
  attempt_ref ref{task.id, task.attempt};
  add_running(self, task, owner).handler = handler;
  ++st.scheduled;
  arm_timeout(task, owner);
  // Bounded by the handler's own limits and the grace period, not by this
  // request: it waits as long as the handler runs.
  self->request(handler, caf::infinite, run_atom::value, std::move(task))
    .then(
      [=](bool) {
        report(self, judged(self, ref, caf::none));
        flush(self);
        self->demonitor(handler.address());
        self->send_exit(handler, caf::exit_reason::user_shutdown);
      },
      [=](caf::error& err) {
        if (err == caf::sec::request_receiver_down
            || err == caf::sec::unexpected_response) {
          // It died or answered nonsense: its down message decides.
          auto i = self->state.running->find(ref);
          if (i != self->state.running->end())
            i->second.pending = std::move(err);
        } else {
          report(self, judged(self, ref, err));
          flush(self);
          self->demonitor(handler.address());
        }
        self->send_exit(handler, caf::exit_reason::user_shutdown);
      });
}

void handler_down(pool_ptr self, const caf::down_msg& msg) {
  auto& st = self->state;
  for (auto& kvp : *st.running) {
    if (!kvp.second.handler || kvp.second.handler.address() != msg.source)
      continue;
    // Our own shutdown of it is no news; then the failed answer is.
    auto reason = msg.reason;
    if (!reason || reason == caf::exit_reason::user_shutdown)
      reason = kvp.second.pending;
    caf::error failure;
    if (code_of(reason) == errc::handler_failed)
      failure = reason;
    else
      failure = make_error(errc::handler_failed,
                           "handler actor failed: "
                             + (reason ? render(reason)
                                       : std::string{"it exited without "
                                                     "answering"}));
    report(self, judged(self, kvp.first, failure));
    flush(self);
    return;
  }
}

void kill_handler(pool_ptr self, const attempt_ref& ref) {
  auto& st = self->state;
  auto i = st.running->find(ref);
  if (i == st.running->end() || !i->second.handler)
    return;
  auto handler = i->second.handler;
  auto why = i->second.token->reason();
  self->demonitor(handler.address());
  self->send_exit(handler, caf::exit_reason::kill);
  auto failure
    = make_error(errc::handler_failed,
                 "handler actor ignored its " + to_string(why) + " for "
                   + std::to_string(st.ctx->cfg.handler_grace.count())
                   + " ms and was killed");
  report(self, judged(self, ref, failure));
  flush(self);
}

} // namespace cafmq::actors::pool_impl
