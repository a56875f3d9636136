#include "cafmq/actors/pool.hpp"

#include <deque>
#include <unordered_map>
#include <unordered_set>

#include <caf/all.hpp>

#include "cafmq/actors/messages.hpp"
#include "cafmq/actors/worker.hpp"
#include "cafmq/error.hpp"

namespace cafmq::actors {

namespace {

struct attempt_info {
  caf::actor channel;
  caf::actor runner; // the worker or the handler actor
  int attempt;
  std::shared_ptr<cancellation> token;
  // The failure filter of a handler actor's task; empty for workers.
  failure_filter filter;
  bool is_actor = false;
  // A handler actor's failed request, reported when its down message tells
  // more (the exit reason).
  caf::error pending;
  // Runs on a scheduled worker (a non-blocking handler).
  bool is_inline = false;
};

struct pool_state {
  // Workers with threads of their own, for handlers that may block.
  std::vector<caf::actor> idle;
  // Workers on the scheduler, for handlers declared non-blocking.
  std::vector<caf::actor> idle_inline;
  // Attempts that wait for a slot (at most max_concurrency run at once).
  std::deque<std::pair<claimed_task, caf::actor>> waiting;
  // Keyed by attempt: after a lost lease the same task can run here twice.
  std::unordered_map<attempt_ref, attempt_info> active;
  std::unordered_map<std::string, const actor_task_definition*> actor_tasks;
  // Cancels for attempts still on their way here (queued in a channel):
  // applied when they start. Bounded by the attempts in flight.
  std::unordered_map<attempt_ref, cancel_reason> early_cancels;
  runner_config cfg;
  caf::actor dispatcher;
  // The runner stops: attempts that have not started are given back.
  bool stopping = false;
  // Handler actors still running; shared with the exit hook, which ends
  // them so that an abandoned one cannot keep the actor system alive.
  std::shared_ptr<std::unordered_set<caf::actor>> handlers
    = std::make_shared<std::unordered_set<caf::actor>>();
  static inline const char* name = "cafmq.pool";
};

using pool_actor = caf::stateful_actor<pool_state>;

void start(pool_actor* self, claimed_task task, caf::actor channel);

// Starts waiting attempts while slots are free.
void start_waiting(pool_actor* self) {
  auto& st = self->state;
  while (!st.waiting.empty()
         && static_cast<int>(st.active.size()) < st.cfg.max_concurrency) {
    auto next = std::move(st.waiting.front());
    st.waiting.pop_front();
    start(self, std::move(next.first), std::move(next.second));
  }
}

// Reports an ended attempt once; later reports of the same attempt (say, the
// down message after a handler actor's error reply) are ignored.
void report(pool_actor* self, task_outcome outcome) {
  auto& st = self->state;
  auto i = st.active.find(outcome.ref);
  if (i == st.active.end())
    return;
  auto info = std::move(i->second);
  st.active.erase(i);
  st.early_cancels.erase(outcome.ref);
  self->send(info.channel, done_atom::value, outcome.ref);
  self->send(st.dispatcher, done_atom::value, std::move(outcome));
  start_waiting(self);
}

// Ends an attempt that never started: a stop gives it back, a cancel ends
// it without running the handler, a lost lease leaves nothing to write.
void end_unstarted(pool_actor* self, const claimed_task& task,
                   const caf::actor& channel, cancel_reason why) {
  auto& st = self->state;
  task_outcome outcome;
  outcome.ref = attempt_ref{task.id, task.attempt};
  st.early_cancels.erase(outcome.ref);
  if (why == cancel_reason::shutdown) {
    outcome.kind = task_outcome::released;
  } else if (why == cancel_reason::lost) {
    outcome.kind = task_outcome::recorded;
  } else {
    cancellation token;
    token.cancel(why);
    auto filter = st.cfg.is_failure;
    if (auto i = st.actor_tasks.find(task.name); i != st.actor_tasks.end())
      if (i->second->is_failure)
        filter = i->second->is_failure;
    if (auto def = st.cfg.tasks ? st.cfg.tasks->find(task.name) : nullptr)
      if (def->is_failure)
        filter = def->is_failure;
    outcome = judge(
      outcome, make_error(errc::handler_failed, "the attempt never started"),
      false, token, filter);
  }
  self->send(channel, done_atom::value, outcome.ref);
  self->send(st.dispatcher, done_atom::value, std::move(outcome));
}

// Arms the attempt's timeout or deadline, whichever comes first.
void arm_limits(pool_actor* self, const claimed_task& task) {
  std::optional<std::chrono::microseconds> left;
  auto why = cancel_reason::timeout;
  if (task.timeout)
    left = *task.timeout;
  if (task.deadline_in) {
    // The deadline counts from the claim, not from the start.
    auto deadline_in = *task.deadline_in;
    if (task.received != std::chrono::steady_clock::time_point{})
      deadline_in -= std::chrono::duration_cast<std::chrono::microseconds>(
        self->clock().now() - task.received);
    if (!left || deadline_in < *left) {
      left = deadline_in;
      why = cancel_reason::deadline;
    }
  }
  if (!left)
    return;
  auto delay = std::max(std::chrono::microseconds{0}, *left);
  self->delayed_send(self, delay, deadline_atom::value, task.id, task.attempt,
                     why);
}

void fire(pool_actor* self, attempt_info& info, cancel_reason why) {
  if (info.token->cancel(why) && info.is_actor)
    self->send(info.runner, cancel_atom::value, why);
}

// The outcome of a handler actor's attempt, judged like a worker's.
task_outcome judged(pool_actor* self, const attempt_ref& ref,
                    const caf::error& err) {
  task_outcome result;
  result.ref = ref;
  auto i = self->state.active.find(ref);
  if (i == self->state.active.end())
    return result;
  return judge(result, err, false, *i->second.token, i->second.filter);
}

void run_actor_handler(pool_actor* self, const actor_task_definition& def,
                       claimed_task task, caf::actor channel) {
  auto handler = def.spawn(self->system());
  self->state.handlers->insert(handler);
  self->monitor(handler);
  auto filter = def.is_failure ? def.is_failure : self->state.cfg.is_failure;
  self->state.active[attempt_ref{task.id, task.attempt}]
    = attempt_info{channel,
                   handler,
                   task.attempt,
                   std::make_shared<cancellation>(),
                   std::move(filter),
                   true,
                   {}};
  arm_limits(self, task);
  attempt_ref ref{task.id, task.attempt};
  self->request(handler, caf::infinite, run_atom::value, task)
    .then(
      [=](bool) {
        report(self, judged(self, ref, caf::none));
        self->demonitor(handler);
        self->send_exit(handler, caf::exit_reason::user_shutdown);
        self->state.handlers->erase(handler);
      },
      [=](caf::error& err) {
        if (err == caf::sec::request_receiver_down
            || err == caf::sec::unexpected_response) {
          // The actor died or answered nonsense: its down message decides.
          auto i = self->state.active.find(ref);
          if (i != self->state.active.end())
            i->second.pending = std::move(err);
        } else {
          report(self, judged(self, ref, err));
        }
        self->send_exit(handler, caf::exit_reason::user_shutdown);
        self->state.handlers->erase(handler);
      });
}

void start(pool_actor* self, claimed_task task, caf::actor channel) {
  auto& st = self->state;
  if (st.stopping) {
    end_unstarted(self, task, channel, cancel_reason::shutdown);
    return;
  }
  // A cancel that overtook the attempt on its way here.
  if (auto i = st.early_cancels.find({task.id, task.attempt});
      i != st.early_cancels.end()) {
    end_unstarted(self, task, channel, i->second);
    return;
  }
  if (static_cast<int>(st.active.size()) >= st.cfg.max_concurrency) {
    st.waiting.emplace_back(std::move(task), std::move(channel));
    return;
  }
  auto i = st.actor_tasks.find(task.name);
  if (i != st.actor_tasks.end()) {
    run_actor_handler(self, *i->second, std::move(task), std::move(channel));
    return;
  }
  // Free slot and a function handler: a worker of each kind is idle (one
  // per slot).
  auto def = st.cfg.tasks ? st.cfg.tasks->find(task.name) : nullptr;
  auto is_inline = def != nullptr && !def->blocking;
  auto& idle = is_inline ? st.idle_inline : st.idle;
  auto worker = idle.back();
  idle.pop_back();
  auto token = std::make_shared<cancellation>();
  st.active[attempt_ref{task.id, task.attempt}] = attempt_info{
    std::move(channel), worker, task.attempt, token, nullptr, false, {},
    is_inline};
  arm_limits(self, task);
  self->send(worker, run_atom::value, std::move(task), std::move(token));
}

caf::behavior pool(pool_actor* self, runner_config cfg, caf::actor db,
                   caf::actor dispatcher) {
  auto& st = self->state;
  st.cfg = std::move(cfg);
  st.dispatcher = std::move(dispatcher);
  for (auto& def : st.cfg.actor_tasks)
    st.actor_tasks.emplace(def.name, &def);
  auto me = caf::actor_cast<caf::actor>(self);
  std::vector<caf::actor> workers;
  for (int i = 0; i < st.cfg.max_concurrency; ++i) {
    st.idle.push_back(spawn_worker(self->system(), st.cfg.detached_workers,
                                   st.cfg.tasks, st.cfg.is_failure, db, me));
    st.idle_inline.push_back(spawn_worker(self->system(), false, st.cfg.tasks,
                                          st.cfg.is_failure, db, me));
  }
  workers = st.idle;
  workers.insert(workers.end(), st.idle_inline.begin(), st.idle_inline.end());
  self->attach_functor([workers, handlers = st.handlers](const caf::error&) {
    for (auto& w : workers)
      caf::anon_send_exit(w, caf::exit_reason::user_shutdown);
    for (auto& h : *handlers)
      caf::anon_send_exit(h, caf::exit_reason::user_shutdown);
  });
  self->set_down_handler([=](caf::down_msg& msg) {
    // A handler actor ended; if it had not replied, its attempt failed.
    auto& st = self->state;
    for (auto h = st.handlers->begin(); h != st.handlers->end(); ++h)
      if (h->address() == msg.source) {
        st.handlers->erase(h);
        break;
      }
    for (auto& kvp : st.active) {
      if (kvp.second.runner.address() != msg.source)
        continue;
      // Our own shutdown of it is no news; then the failed reply is.
      auto reason = msg.reason;
      if (!reason || reason == caf::exit_reason::user_shutdown)
        reason = kvp.second.pending;
      auto failure
        = make_error(errc::handler_failed,
                     "handler actor failed: "
                       + (reason ? render(reason)
                                 : std::string{"it exited without replying"}));
      report(self, judged(self, kvp.first, failure));
      return;
    }
  });
  return {
    [=](cancel_atom, const attempt_ref& ref, cancel_reason why) {
      // The dispatcher only cancels attempts it handed out: one that is not
      // here yet is still queued in its channel (or just ended).
      auto& st = self->state;
      auto i = st.active.find(ref);
      if (i != st.active.end()) {
        fire(self, i->second, why);
        return;
      }
      // Waiting for a slot: it ends without running.
      for (auto w = st.waiting.begin(); w != st.waiting.end(); ++w) {
        if (w->first.id == ref.id && w->first.attempt == ref.attempt) {
          auto entry = std::move(*w);
          st.waiting.erase(w);
          end_unstarted(self, entry.first, entry.second, why);
          return;
        }
      }
      if (st.early_cancels.size() >= 10000)
        st.early_cancels.clear(); // stale entries of attempts that ended
      st.early_cancels.emplace(ref, why);
    },
    [=](deadline_atom, const uuid& id, int attempt, cancel_reason why) {
      auto i = self->state.active.find(attempt_ref{id, attempt});
      if (i != self->state.active.end())
        fire(self, i->second, why);
    },
    [=](run_atom, claimed_task& task) {
      auto channel = caf::actor_cast<caf::actor>(self->current_sender());
      start(self, std::move(task), std::move(channel));
    },
    [=](done_atom, task_outcome& outcome) {
      auto& st = self->state;
      // The sender is the worker that is free now.
      auto worker = caf::actor_cast<caf::actor>(self->current_sender());
      auto i = st.active.find(outcome.ref);
      if (i != st.active.end() && i->second.is_inline)
        st.idle_inline.push_back(std::move(worker));
      else
        st.idle.push_back(std::move(worker));
      report(self, std::move(outcome));
    },
    [=](stop_atom) {
      auto& st = self->state;
      st.stopping = true;
      auto waiting = std::move(st.waiting);
      st.waiting.clear();
      for (auto& entry : waiting)
        end_unstarted(self, entry.first, entry.second, cancel_reason::shutdown);
    },
  };
}

} // namespace

caf::actor spawn_pool(caf::actor_system& sys, const runner_config& cfg,
                      caf::actor db, caf::actor dispatcher) {
  return sys.spawn(pool, cfg, std::move(db), std::move(dispatcher));
}

} // namespace cafmq::actors
