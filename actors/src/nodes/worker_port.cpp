// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/actors/detail/worker_port.hpp"

#include <cstring>
#include <unordered_set>

#include <sys/wait.h>

#include <caf/all.hpp>

#include "cafmq/error.hpp"

namespace cafmq::actors {

namespace {

struct port_state {
  context_ptr ctx;
  worker_offer offer;
  worker_actor worker;
  router_actor router;
  database_actor db;
  // The attempts on the worker: nothing else is accepted from it.
  std::unordered_set<attempt_ref> held;
  // Why the worker was lost, while its process's status is awaited.
  std::string lost;
  bool stopping = false;
  static inline const char* name = "cafmq.worker_port";
};

using port_ptr = worker_port_actor::stateful_pointer<port_state>;

// How long a port whose worker process vanished waits for its status.
constexpr std::chrono::seconds exit_status_wait{2};

// Ends every held attempt as failed (retryable: it runs again elsewhere),
// reports them to the router, and quits.
void lose_worker(port_ptr self, const std::string& why) {
  auto& st = self->state;
  std::vector<task_outcome> outcomes;
  for (auto& ref : st.held) {
    task_outcome x;
    x.ref = ref;
    x.kind = task_outcome::failed;
    x.error = why;
    x.retryable = true;
    x.worker = st.offer.node;
    outcomes.push_back(std::move(x));
  }
  st.ctx->log(log_level::warning, "worker lost, its attempts failed",
              {{"worker", st.offer.node},
               {"attempts", outcomes.size()},
               {"reason", why}});
  st.held.clear();
  if (!outcomes.empty())
    self->send(st.router, lost_atom::value, std::move(outcomes));
  self->quit();
}

void quit_if_drained(port_ptr self) {
  if (self->state.stopping && self->state.held.empty())
    self->quit();
}

worker_port_actor::behavior_type port(port_ptr self, context_ptr ctx,
                                      worker_offer offer, worker_actor worker,
                                      router_actor router, database_actor db) {
  auto& st = self->state;
  st.ctx = std::move(ctx);
  st.offer = std::move(offer);
  st.worker = std::move(worker);
  st.router = std::move(router);
  st.db = std::move(db);
  self->monitor(st.worker);
  self->attach_functor([worker = st.worker](const caf::error&) {
    caf::anon_send(worker, stop_atom::value);
  });
  self->set_down_handler([=](caf::down_msg& msg) {
    auto& st = self->state;
    if (msg.source != st.worker.address())
      return;
    auto why = "worker node " + st.offer.node + " lost: "
               + (msg.reason ? render(msg.reason) : std::string{"it left"});
    // A worker process's connection drops as it dies: its exit status, which
    // names the signal, follows from the reaper at once.
    if (st.offer.pid != 0 && !st.held.empty()) {
      st.lost = std::move(why);
      self->delayed_send(self, exit_status_wait, lost_atom::value);
      return;
    }
    lose_worker(self, why);
  });
  return {
    [=](run_atom, std::vector<claimed_task>& tasks) {
      auto& st = self->state;
      for (auto& task : tasks)
        st.held.insert(attempt_ref{task.id, task.attempt});
      self->send(st.worker, run_atom::value, std::move(tasks));
    },
    [=](cancel_atom, const attempt_ref& ref, cancel_reason why) {
      auto& st = self->state;
      if (st.held.count(ref) > 0)
        self->send(st.worker, cancel_atom::value, ref, why);
    },
    [=](done_atom, std::vector<task_outcome>& outcomes) {
      auto& st = self->state;
      auto held = [&](const task_outcome& x) {
        return st.held.erase(x.ref);
      };
      outcomes.erase(std::remove_if(outcomes.begin(), outcomes.end(),
                                    [&](auto& x) { return held(x) == 0; }),
                     outcomes.end());
      for (auto& x : outcomes)
        x.worker = st.offer.node;
      if (!outcomes.empty())
        self->send(st.router, done_atom::value, std::move(outcomes));
      quit_if_drained(self);
    },
    [=](checkpt_atom, const attempt_ref& ref,
        const checkpoint& cp) -> caf::result<bool> {
      auto& st = self->state;
      if (st.held.count(ref) == 0)
        return stale_attempt_error(ref);
      return self->delegate(st.db, checkpt_atom::value, ref, cp);
    },
    [=](renew_atom, const attempt_ref& ref,
        caf::timespan lease) -> caf::result<bool> {
      auto& st = self->state;
      if (st.held.count(ref) == 0)
        return stale_attempt_error(ref);
      auto rp = self->make_response_promise<bool>();
      self
        ->request(st.db, st.ctx->request_timeout(), renew_atom::value,
                  std::vector<attempt_ref>{ref}, lease)
        .then(
          [=](const std::vector<lease_state>& owned) mutable {
            if (!renewed_one(owned))
              rp.deliver(stale_attempt_error(ref));
            else
              rp.deliver(true);
          },
          [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
      return rp;
    },
    [=](peers_atom, database_actor& x) { self->state.db = std::move(x); },
    [=](exited_atom, std::int32_t status) {
      auto& st = self->state;
      lose_worker(self, "worker process " + st.offer.node + " (pid "
                          + std::to_string(st.offer.pid) + ") "
                          + describe_wait_status(status));
    },
    [=](lost_atom) { lose_worker(self, self->state.lost); },
    [=](stop_atom) {
      self->state.stopping = true;
      quit_if_drained(self);
    },
  };
}

} // namespace

std::string describe_wait_status(std::int32_t status) {
  if (WIFSIGNALED(status)) {
    auto sig = WTERMSIG(status);
    auto name = sigabbrev_np(sig);
    return "was killed by signal " + std::to_string(sig) + " (SIG"
           + (name != nullptr ? name : "?") + ")";
  }
  if (WIFEXITED(status))
    return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "ended with wait status " + std::to_string(status);
}

worker_port_actor spawn_worker_port(caf::actor_system& sys, context_ptr ctx,
                                    worker_offer offer, worker_actor worker,
                                    router_actor router, database_actor db) {
  return sys.spawn(port, std::move(ctx), std::move(offer), std::move(worker),
                   std::move(router), std::move(db));
}

} // namespace cafmq::actors
