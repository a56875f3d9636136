// SPDX-License-Identifier: BSD-3-Clause
// How the pool ends attempts early: a cancel fires the token (and a handler
// actor's grace), an owner that ended orphans its attempts, and the stop's
// bound abandons function handlers that ignore their cancel.

#include <algorithm>

#include <caf/all.hpp>

#include "cafmq/error.hpp"
#include "runtime/attempt.hpp"
#include "runtime/executor.hpp"
#include "runtime/pool_state.hpp"

namespace cafmq::actors::pool_impl {

void fire(pool_ptr self, const attempt_ref& ref, running_attempt& x,
          cancel_reason why) {
  if (!x.token->cancel(why) || !x.handler)
    return;
  self->send(x.handler, cancel_atom::value, why);
  self->delayed_send(self, self->state.ctx->cfg.handler_grace, kill_atom::value,
                     ref);
}

// An owner (a channel actor) ended, a crash or a restart: nobody is left to
// write what its attempts return. Their tokens fire (reason lost), handler
// actors get their grace, and what they return later goes to the dead
// owner, that is nowhere; the ones that have not started never do. Their leases
// lapse, and another claim runs them again.
bool owner_down(pool_ptr self, const caf::down_msg& msg) {
  auto& st = self->state;
  if (!st.owners.forget(msg.source))
    return false;
  auto orphaned = [&](const channel_actor& owner) {
    return owner.address() == msg.source;
  };
  std::vector<task_outcome> unstarted;
  int running = 0;
  for (auto& [ref, x] : *st.running) {
    if (!orphaned(x.owner))
      continue;
    if (x.pooled && st.exec->take(ref)) {
      unstarted.push_back(unstarted_outcome(ref, cancel_reason::lost, nullptr));
      continue;
    }
    ++running;
    fire(self, ref, x, cancel_reason::lost);
  }
  // First the waiting ones, which the freed slots would start.
  st.waiting.erase(std::remove_if(st.waiting.begin(), st.waiting.end(),
                                  [&](auto& w) { return orphaned(w.second); }),
                   st.waiting.end());
  for (auto& outcome : unstarted)
    report(self, std::move(outcome));
  if (running > 0 || !unstarted.empty())
    st.ctx->log(log_level::warning,
                "a channel actor ended while its attempts ran: they are "
                "cancelled, and what they return is not written",
                {{"running", running},
                 {"unstarted", static_cast<int>(unstarted.size())}});
  flush(self);
  return true;
}

// The stop's bound passed: function handlers that still run ignore their
// cancel. Their attempts are handed back now, and what the handlers return
// later is dropped. Their threads are not waited for: an executor thread
// ends with its handler, or with the process.
void abandon_handlers(pool_ptr self) {
  auto& st = self->state;
  std::vector<task_outcome> given_up;
  for (auto& [ref, x] : *st.running) {
    if (x.handler)
      continue;
    // A pooled attempt still waiting for a thread ends as unstarted.
    if (x.pooled && st.exec->take(ref)) {
      given_up.push_back(
        unstarted_outcome(ref, cancel_reason::shutdown, *x.filter));
      continue;
    }
    st.ctx->log(
      log_level::warning,
      "abandoning a handler that ignores its cancel: its attempt "
      "is handed back, and its thread is not waited for",
      {{"task", x.name}, {"id", to_string(ref.id)}, {"attempt", ref.attempt}});
    task_outcome outcome;
    outcome.ref = ref;
    outcome.kind = task_outcome::abandoned;
    given_up.push_back(std::move(outcome));
  }
  for (auto& outcome : given_up)
    report(self, std::move(outcome));
  flush(self);
}

} // namespace cafmq::actors::pool_impl
