// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/actors/detail/pool.hpp"

#include <algorithm>
#include <deque>

#include <caf/all.hpp>

#include "cafmq/error.hpp"
#include "runtime/attempt.hpp"
#include "runtime/executor.hpp"
#include "runtime/pool_state.hpp"
#include "runtime/started_attempts.hpp"

namespace cafmq::actors {

namespace pool_impl {

void start(pool_ptr self, claimed_task task, channel_actor owner);

void add_outcome(pool_ptr self, const channel_actor& owner,
                 task_outcome outcome) {
  self->state.owners.add(owner, std::move(outcome));
}

running_attempt& add_running(pool_ptr self, const claimed_task& task,
                             channel_actor owner, bool pooled) {
  auto& st = self->state;
  // A pooled attempt starts when a thread takes it (see `post`).
  if (!pooled)
    st.started->add(task.id, task.attempt);
  auto& x = (*st.running)[attempt_ref{task.id, task.attempt}];
  x = running_attempt{};
  x.owner = std::move(owner);
  x.name = task.name;
  x.token = std::make_shared<cancellation>();
  x.filter = &st.ctx->filter_of(task.name);
  x.pooled = pooled;
  x.metrics = &st.ctx->metrics->of(task.name);
  x.started = std::chrono::steady_clock::now();
  return x;
}

void start_waiting(pool_ptr self) {
  auto& st = self->state;
  while (!st.waiting.empty() && st.scheduled < st.ctx->cfg.max_concurrency) {
    auto next = std::move(st.waiting.front());
    st.waiting.pop_front();
    start(self, std::move(next.first), std::move(next.second));
  }
}

// Reports an ended attempt once; later reports of the same attempt (the
// down message after a handler actor's error answer) are ignored.
void report(pool_ptr self, task_outcome outcome) {
  auto& st = self->state;
  auto i = st.running->find(outcome.ref);
  if (i == st.running->end())
    return;
  auto x = std::move(i->second);
  st.running->erase(i);
  st.started->remove(outcome.ref.id);
  if (x.metrics != nullptr && !x.pooled)
    st.ctx->metrics->ran(*x.metrics,
                         std::chrono::steady_clock::now() - x.started);
  add_outcome(self, x.owner, std::move(outcome));
  if (!x.pooled)
    --st.scheduled;
  start_waiting(self);
}

// Sends what the current message produced.
void flush(pool_ptr self) {
  auto& st = self->state;
  if (!st.to_executor.empty()) {
    st.exec->post(std::move(st.to_executor));
    st.to_executor.clear();
  }
  st.owners.send(self);
}

// What every job of the executor needs besides its task: one shared
// record, so that a job copies one reference instead of seven.
std::shared_ptr<const job_env> env_of(pool_ptr self) {
  auto& st = self->state;
  if (!st.env) {
    // The thread reaches the actor system only through the executor's
    // gate, and holds the (detached) database actor only weakly: a handler
    // abandoned at a stop may return after the system is gone, and must not
    // keep its destructor waiting.
    st.env = std::make_shared<const job_env>(
      job_env{caf::actor_cast<pool_actor>(self), self->system(), st.ctx,
              st.started, caf::actor_cast<caf::weak_actor_ptr>(st.db),
              st.outbox, st.exec->system_gate()});
  }
  return st.env;
}

// Queues an attempt of a handler that may block on the executor. It
// starts when a thread is free: then it arms its timeout, or ends without
// running if it was cancelled while it waited.
void post(pool_ptr self, claimed_task task, channel_actor owner) {
  auto& st = self->state;
  attempt_ref ref{task.id, task.attempt};
  auto& x = add_running(self, task, owner, true);
  auto run = [task = std::move(task), token = x.token, filter = x.filter, owner,
              instruments = x.metrics, env = env_of(self), ref] {
    task_outcome outcome;
    if (token->cancelled()) {
      outcome = unstarted_outcome(ref, token->reason(), *filter);
    } else {
      {
        auto open = env->gate->enter();
        if (!open)
          return;
        env->started->add(ref.id, ref.attempt);
        arm_timeout(task, owner);
      }
      auto& ctx = *env->ctx;
      auto t0 = std::chrono::steady_clock::now();
      outcome = run_attempt(*ctx.cfg.tasks, *filter, env->sys, env->db,
                            ctx.request_timeout(), task, token, env->gate);
      if (instruments != nullptr)
        ctx.metrics->ran(*instruments, std::chrono::steady_clock::now() - t0);
    }
    if (env->box->put(std::move(outcome)))
      caf::anon_send(env->pool, collect_atom::value);
  };
  st.to_executor.push_back({ref, std::move(run)});
}

// Runs a non-blocking handler on the scheduler.
void run_inline(pool_ptr self, claimed_task task, channel_actor owner) {
  auto& st = self->state;
  auto& x = add_running(self, task, owner);
  auto token = x.token;
  auto filter = x.filter;
  ++st.scheduled;
  arm_timeout(task, owner);
  auto job = self->spawn([task = std::move(task), token, filter,
                          pool = caf::actor_cast<pool_actor>(self),
                          ctx = st.ctx](
                           job_actor::pointer me) -> job_actor::behavior_type {
    return {
      [=](run_atom) {
        auto outcome = run_attempt(*ctx->cfg.tasks, *filter,
                                   nonblocking_backend(task.name), task, token);
        me->send(pool, done_atom::value, std::move(outcome));
        me->quit();
      },
    };
  });
  self->send(job, run_atom::value);
}

void start(pool_ptr self, claimed_task task, channel_actor owner) {
  auto& st = self->state;
  attempt_ref ref{task.id, task.attempt};
  if (st.stopping) {
    add_outcome(self, owner,
                unstarted_outcome(ref, cancel_reason::shutdown, nullptr));
    return;
  }
  auto actor_def = st.ctx->actor_task(task.name);
  auto def = st.ctx->cfg.tasks ? st.ctx->cfg.tasks->find(task.name) : nullptr;
  if (actor_def == nullptr && def == nullptr) {
    // No handler here (the channel sends such names to the router): back
    // to the queue.
    add_outcome(self, owner,
                unstarted_outcome(ref, cancel_reason::shutdown, nullptr));
    return;
  }
  if (actor_def == nullptr && def != nullptr && def->blocking) {
    post(self, std::move(task), std::move(owner));
    return;
  }
  if (st.scheduled >= st.ctx->cfg.max_concurrency) {
    st.waiting.emplace_back(std::move(task), std::move(owner));
    return;
  }
  if (actor_def != nullptr)
    run_actor_handler(self, *actor_def, std::move(task), std::move(owner));
  else
    run_inline(self, std::move(task), std::move(owner));
}

pool_actor::behavior_type pool(pool_ptr self, context_ptr ctx,
                               std::shared_ptr<executor> exec,
                               database_actor db,
                               std::shared_ptr<started_attempts> started) {
  auto& st = self->state;
  st.ctx = std::move(ctx);
  st.started = std::move(started);
  st.exec = std::move(exec);
  st.db = std::move(db);
  self->attach_functor(
    [running = st.running, exec = st.exec](const caf::error&) {
      // However we end, handlers learn it: tokens fire, actors go.
      exec->close();
      for (auto& kvp : *running) {
        kvp.second.token->cancel(cancel_reason::shutdown);
        if (kvp.second.handler)
          caf::anon_send_exit(kvp.second.handler, caf::exit_reason::kill);
      }
    });
  self->set_down_handler([=](caf::down_msg& msg) {
    if (!owner_down(self, msg))
      handler_down(self, msg);
  });
  return {
    [=](run_atom, std::vector<claimed_task>& tasks) {
      auto owner = self->state.owners.sender(self);
      for (auto& task : tasks)
        start(self, std::move(task), owner);
      flush(self);
    },
    [=](cancel_atom, const attempt_ref& ref, cancel_reason why) {
      auto& st = self->state;
      auto i = st.running->find(ref);
      if (i != st.running->end()) {
        // Still waiting for a thread: it ends now, without running.
        if (i->second.pooled && st.exec->take(ref)) {
          report(self, unstarted_outcome(ref, why, *i->second.filter));
          flush(self);
          return;
        }
        fire(self, ref, i->second, why);
        return;
      }
      auto& xs = st.waiting;
      for (auto w = xs.begin(); w != xs.end(); ++w) {
        if (w->first.id == ref.id && w->first.attempt == ref.attempt) {
          auto owner = std::move(w->second);
          auto filter = st.ctx->filter_of(w->first.name);
          xs.erase(w);
          add_outcome(self, owner, unstarted_outcome(ref, why, filter));
          flush(self);
          return;
        }
      }
    },
    [=](collect_atom) {
      for (auto& outcome : self->state.outbox->take())
        report(self, std::move(outcome));
      flush(self);
    },
    [=](done_atom, task_outcome& outcome) {
      report(self, std::move(outcome));
      flush(self);
    },
    [=](kill_atom, const attempt_ref& ref) { kill_handler(self, ref); },
    [=](abandon_atom) { abandon_handlers(self); },
    [=](peers_atom, database_actor& x) {
      self->state.db = std::move(x);
      // Jobs posted from now on hold the new one.
      self->state.env.reset();
    },
    [=](stop_atom) {
      auto& st = self->state;
      st.stopping = true;
      auto waiting = std::move(st.waiting);
      st.waiting.clear();
      for (auto& entry : waiting)
        add_outcome(self, entry.second,
                    unstarted_outcome({entry.first.id, entry.first.attempt},
                                      cancel_reason::shutdown, nullptr));
      for (auto& ref : st.exec->take_all())
        report(self, unstarted_outcome(ref, cancel_reason::shutdown, nullptr));
      flush(self);
    },
  };
}

} // namespace pool_impl

pool_actor spawn_pool(caf::actor_system& sys, context_ptr ctx,
                      std::shared_ptr<executor> exec, database_actor db,
                      std::shared_ptr<started_attempts> started) {
  return sys.spawn(pool_impl::pool, std::move(ctx), std::move(exec),
                   std::move(db), std::move(started));
}

} // namespace cafmq::actors
