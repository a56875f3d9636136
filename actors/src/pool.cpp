#include "cafmq/actors/pool.hpp"

#include <deque>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include <caf/all.hpp>

#include "cafmq/actors/messages.hpp"
#include "cafmq/actors/worker.hpp"
#include "cafmq/error.hpp"
#include "executor.hpp"

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
  // Queued in or running on the executor (a handler that may block).
  bool pooled = false;
};

struct outcome_box {
  std::mutex mtx;
  std::vector<task_outcome> items;

  // Adds an outcome; true if the box was empty (then the pool needs telling).
  bool put(task_outcome x) {
    std::lock_guard<std::mutex> guard{mtx};
    items.push_back(std::move(x));
    return items.size() == 1;
  }

  std::vector<task_outcome> take() {
    std::vector<task_outcome> result;
    std::lock_guard<std::mutex> guard{mtx};
    result.swap(items);
    return result;
  }
};

struct pool_state {
  // Threads for handlers that may block; with them, attempts of such
  // handlers queue there (as many run as it has threads) rather than in
  // `waiting`. Without them (deterministic tests), scheduled workers in
  // `idle` run those handlers too.
  std::shared_ptr<executor> exec;
  // Attempts in `active` that are on the executor.
  int pooled = 0;
  caf::actor db;
  // Workers for handlers that may block, when there is no executor.
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
  // Outcomes of executor jobs, collected by the pool: a job that finds the
  // box empty sends (collect_atom), so that a burst of outcomes costs one
  // message.
  std::shared_ptr<outcome_box> outbox = std::make_shared<outcome_box>();
  // What this message produced, sent when it is handled (see flush): one
  // message per channel and one to the dispatcher, and one post of new
  // jobs to the executor.
  std::unordered_map<caf::actor, std::vector<attempt_ref>> to_channels;
  std::vector<task_outcome> to_dispatcher;
  std::vector<executor::job> to_executor;
  // Handler actors still running; shared with the exit hook, which ends
  // them so that an abandoned one cannot keep the actor system alive.
  std::shared_ptr<std::unordered_set<caf::actor>> handlers
    = std::make_shared<std::unordered_set<caf::actor>>();
  static inline const char* name = "cafmq.pool";
};

using pool_actor = caf::stateful_actor<pool_state>;

void start(pool_actor* self, claimed_task task, caf::actor channel);

// Slots of max_concurrency in use outside the executor.
int slots_used(const pool_state& st) {
  return static_cast<int>(st.active.size()) - st.pooled;
}

// Starts waiting attempts while slots are free.
void start_waiting(pool_actor* self) {
  auto& st = self->state;
  while (!st.waiting.empty() && slots_used(st) < st.cfg.max_concurrency) {
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
  if (info.pooled)
    --st.pooled;
  st.early_cancels.erase(outcome.ref);
  st.to_channels[info.channel].push_back(outcome.ref);
  st.to_dispatcher.push_back(std::move(outcome));
  start_waiting(self);
}

// Sends what the current message produced.
void flush(pool_actor* self) {
  auto& st = self->state;
  if (!st.to_executor.empty()) {
    st.exec->post(std::move(st.to_executor));
    st.to_executor.clear();
  }
  for (auto& kvp : st.to_channels)
    self->send(kvp.first, done_atom::value, std::move(kvp.second));
  st.to_channels.clear();
  if (!st.to_dispatcher.empty()) {
    self->send(st.dispatcher, done_atom::value, std::move(st.to_dispatcher));
    st.to_dispatcher.clear();
  }
}

// The failure filter of a task: its own, or the runner's.
failure_filter filter_of(const pool_state& st, const std::string& name) {
  if (auto i = st.actor_tasks.find(name); i != st.actor_tasks.end())
    if (i->second->is_failure)
      return i->second->is_failure;
  if (auto def = st.cfg.tasks ? st.cfg.tasks->find(name) : nullptr)
    if (def->is_failure)
      return def->is_failure;
  return st.cfg.is_failure;
}

// Ends an attempt that never started: a stop gives it back, a cancel ends
// it without running the handler, a lost lease leaves nothing to write.
void end_unstarted(pool_actor* self, const claimed_task& task,
                   const caf::actor& channel, cancel_reason why) {
  auto& st = self->state;
  attempt_ref ref{task.id, task.attempt};
  st.early_cancels.erase(ref);
  auto outcome = unstarted_outcome(ref, why, filter_of(st, task.name));
  st.to_channels[channel].push_back(outcome.ref);
  st.to_dispatcher.push_back(std::move(outcome));
}

// Time left until the attempt's timeout or deadline, whichever comes
// first, for an attempt starting at `now`, and which of the two it is.
std::optional<std::pair<std::chrono::microseconds, cancel_reason>>
limit_of(const claimed_task& task, std::chrono::steady_clock::time_point now) {
  std::optional<std::chrono::microseconds> left;
  auto why = cancel_reason::timeout;
  if (task.timeout)
    left = *task.timeout;
  if (task.deadline_in) {
    // The deadline counts from the claim, not from the start.
    auto deadline_in = *task.deadline_in;
    if (task.received != std::chrono::steady_clock::time_point{})
      deadline_in -= std::chrono::duration_cast<std::chrono::microseconds>(
        now - task.received);
    if (!left || deadline_in < *left) {
      left = deadline_in;
      why = cancel_reason::deadline;
    }
  }
  if (!left)
    return std::nullopt;
  return std::make_pair(std::max(std::chrono::microseconds{0}, *left), why);
}

// Arms the attempt's timeout or deadline, whichever comes first.
void arm_limits(pool_actor* self, const claimed_task& task) {
  if (auto limit = limit_of(task, self->clock().now()))
    self->delayed_send(self, limit->first, deadline_atom::value, task.id,
                       task.attempt, limit->second);
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
  auto filter = filter_of(self->state, def.name);
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
        flush(self);
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
          flush(self);
        }
        self->send_exit(handler, caf::exit_reason::user_shutdown);
        self->state.handlers->erase(handler);
      });
}

// Queues an attempt of a handler that may block on the executor. It starts
// when a thread is free: then it arms its own timeout and deadline, or ends
// without running if it was cancelled while it waited.
void post(pool_actor* self, claimed_task task, caf::actor channel) {
  auto& st = self->state;
  attempt_ref ref{task.id, task.attempt};
  auto token = std::make_shared<cancellation>();
  attempt_info info;
  info.channel = std::move(channel);
  info.attempt = task.attempt;
  info.token = token;
  auto filter = filter_of(st, task.name);
  info.filter = filter;
  info.pooled = true;
  st.active[ref] = std::move(info);
  ++st.pooled;
  auto pool = caf::actor_cast<caf::actor>(self);
  auto& sys = self->system();
  auto run = [task = std::move(task), token, pool, &sys, tasks = st.cfg.tasks,
              filter, db = st.db, ref, box = st.outbox] {
    task_outcome outcome;
    if (token->cancelled()) {
      outcome = unstarted_outcome(ref, token->reason(), filter);
    } else {
      if (auto limit = limit_of(task, std::chrono::steady_clock::now()))
        caf::delayed_anon_send(pool, limit->first, deadline_atom::value,
                               task.id, task.attempt, limit->second);
      outcome = run_attempt(*tasks, filter, sys, db, task, token);
    }
    if (box->put(std::move(outcome)))
      caf::anon_send(pool, collect_atom::value);
  };
  st.to_executor.push_back({ref, std::move(run)});
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
  auto def = st.cfg.tasks ? st.cfg.tasks->find(task.name) : nullptr;
  if (st.exec && def != nullptr && def->blocking
      && st.actor_tasks.count(task.name) == 0) {
    post(self, std::move(task), std::move(channel));
    return;
  }
  if (slots_used(st) >= st.cfg.max_concurrency) {
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
  st.db = db;
  auto me = caf::actor_cast<caf::actor>(self);
  if (st.cfg.detached_workers)
    st.exec = std::make_shared<executor>(
      self->system(), static_cast<std::size_t>(st.cfg.max_concurrency));
  for (int i = 0; i < st.cfg.max_concurrency; ++i) {
    if (!st.exec)
      st.idle.push_back(
        spawn_worker(self->system(), st.cfg.tasks, st.cfg.is_failure, db, me));
    st.idle_inline.push_back(
      spawn_worker(self->system(), st.cfg.tasks, st.cfg.is_failure, db, me));
  }
  auto workers = st.idle;
  workers.insert(workers.end(), st.idle_inline.begin(), st.idle_inline.end());
  self->attach_functor(
    [workers, handlers = st.handlers, exec = st.exec](const caf::error&) {
      if (exec)
        exec->close();
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
      flush(self);
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
        // Queued on the executor: it ends now, without running.
        if (i->second.pooled && st.exec->take(ref)) {
          report(self, unstarted_outcome(ref, why, i->second.filter));
          flush(self);
          return;
        }
        fire(self, i->second, why);
        return;
      }
      // Waiting for a slot: it ends without running.
      for (auto w = st.waiting.begin(); w != st.waiting.end(); ++w) {
        if (w->first.id == ref.id && w->first.attempt == ref.attempt) {
          auto entry = std::move(*w);
          st.waiting.erase(w);
          end_unstarted(self, entry.first, entry.second, why);
          flush(self);
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
    [=](run_atom, std::vector<claimed_task>& tasks) {
      auto channel = caf::actor_cast<caf::actor>(self->current_sender());
      for (auto& task : tasks)
        start(self, std::move(task), channel);
      flush(self);
    },
    [=](collect_atom) {
      for (auto& outcome : self->state.outbox->take())
        report(self, std::move(outcome));
      flush(self);
    },
    [=](done_atom, task_outcome& outcome) {
      auto& st = self->state;
      // From a worker actor: it is free now.
      auto worker = caf::actor_cast<caf::actor>(self->current_sender());
      auto i = st.active.find(outcome.ref);
      if (worker && (i == st.active.end() || !i->second.pooled)) {
        if (i != st.active.end() && i->second.is_inline)
          st.idle_inline.push_back(std::move(worker));
        else
          st.idle.push_back(std::move(worker));
      }
      report(self, std::move(outcome));
      flush(self);
    },
    [=](stop_atom) {
      auto& st = self->state;
      st.stopping = true;
      auto waiting = std::move(st.waiting);
      st.waiting.clear();
      for (auto& entry : waiting)
        end_unstarted(self, entry.first, entry.second, cancel_reason::shutdown);
      if (st.exec)
        for (auto& ref : st.exec->take_all())
          report(self, unstarted_outcome(ref, cancel_reason::shutdown, {}));
      flush(self);
    },
  };
}

} // namespace

caf::actor spawn_pool(caf::actor_system& sys, const runner_config& cfg,
                      caf::actor db, caf::actor dispatcher) {
  return sys.spawn(pool, cfg, std::move(db), std::move(dispatcher));
}

} // namespace cafmq::actors
