// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/actors/detail/channel.hpp"

#include <deque>
#include <unordered_map>

#include <caf/all.hpp>

#include "cafmq/actors/detail/event_hub.hpp"
#include "runtime/attempt.hpp"
#include "runtime/channel_attempt.hpp"
#include "runtime/channel_state.hpp"

namespace cafmq::actors {

namespace {

using channel_impl::attempt;
using channel_impl::channel_ptr;
using channel_impl::channel_state;
using channel_impl::count_ending;
using channel_impl::written_event;

void finish(channel_ptr self, std::vector<task_outcome> outcomes);

bool may_start(const channel_state& st, const claimed_task& next) {
  auto limit = st.ctx->cfg.channel_concurrency;
  if (limit > 0 && st.started >= limit)
    return false;
  return !(next.ordered && st.ordered_started);
}

void arm_idle_timer(channel_ptr self) {
  auto& st = self->state;
  if (!st.attempts.empty())
    return;
  self->delayed_send(self, st.ctx->cfg.channel_idle_timeout, idle_atom::value,
                     ++st.idle_generation);
}

// Hands the pool (or the router) what may start now, in one message each.
void pump(channel_ptr self) {
  auto& st = self->state;
  if (st.stopping || st.paused)
    return;
  std::vector<claimed_task> batch;
  std::vector<claimed_task> remote;
  batch.reserve(st.queue.size());
  while (!st.queue.empty()) {
    auto& next = st.attempts.at(st.queue.front());
    if (!may_start(st, next.task))
      break;
    st.queue.pop_front();
    next.phase = attempt::started;
    ++st.started;
    st.ordered_started |= next.task.ordered;
    next.remote = !st.ctx->runs_here(next.task.name);
    // The pool (or the router) gets the payloads: they are not needed here
    // once the attempt started.
    auto json = std::move(next.task.payload_json);
    auto bytes = std::move(next.task.payload_bytes);
    auto parents = std::move(next.task.parents_json);
    next.task.payload_json.reset();
    next.task.payload_bytes.reset();
    next.task.parents_json.reset();
    auto& out = next.remote ? remote : batch;
    out.push_back(next.task);
    out.back().payload_json = std::move(json);
    out.back().payload_bytes = std::move(bytes);
    out.back().parents_json = std::move(parents);
  }
  if (batch.empty() && remote.empty())
    return;
  if (st.events) {
    std::vector<task_event> events;
    events.reserve(batch.size() + remote.size());
    for (auto* xs : {&batch, &remote})
      for (auto& task : *xs)
        events.push_back(make_event(task_event::started, task, *st.ctx));
    emit(st.events, std::move(events));
  }
  if (!batch.empty())
    self->send(st.pool, run_atom::value, std::move(batch));
  if (!remote.empty())
    self->send(st.router, run_atom::value, std::move(remote));
}

// Cancels a started attempt where it runs.
void cancel_started(channel_ptr self, const attempt_ref& ref,
                    const channel_impl::attempt& x, cancel_reason why) {
  if (x.remote)
    self->send(self->state.router, cancel_atom::value, ref, why);
  else
    self->send(self->state.pool, cancel_atom::value, ref, why);
}

// Attempts that ran where a crashed pool (or router) ran them have no
// outcome coming: they failed.
void fail_started(channel_ptr self, bool remote) {
  std::vector<task_outcome> outcomes;
  for (auto& [ref, x] : self->state.attempts)
    if (x.phase == attempt::started && x.remote == remote)
      outcomes.push_back(channel_impl::crashed_outcome(ref, remote));
  finish(self, std::move(outcomes));
}

// Attempts left their handlers (or never started): write what needs
// writing, free their slots, tell the dispatcher.
void finish(channel_ptr self, std::vector<task_outcome> outcomes) {
  auto& st = self->state;
  finished_counts counts;
  std::vector<task_outcome> to_write;
  std::vector<task_event> events;
  std::vector<attempt_ref> ended;
  to_write.reserve(outcomes.size());
  for (auto& outcome : outcomes) {
    auto i = st.attempts.find(outcome.ref);
    if (i == st.attempts.end() || i->second.phase == attempt::writing)
      continue;
    auto& x = i->second;
    if (x.phase == attempt::started) {
      --st.started;
      if (x.task.ordered)
        st.ordered_started = false;
    }
    switch (outcome.kind) {
      case task_outcome::completed:
        ++counts.completed;
        break;
      case task_outcome::failed:
        ++counts.failed;
        break;
      case task_outcome::released:
      case task_outcome::abandoned:
        ++counts.released;
        break;
      case task_outcome::recorded:
        // A handler that ran completed in its own transaction; one that
        // never ran is no longer this runner's.
        if (x.phase == attempt::started)
          ++counts.completed;
        else
          ++counts.recorded;
        break;
    }
    if (outcome.kind == task_outcome::recorded) {
      count_ending(*st.ctx->metrics, x, outcome);
      // Its handler's transaction, with the completion, has committed: the
      // outcome is written, as for a completion the completer wrote.
      if (x.phase == attempt::started && st.events) {
        x.outcome = outcome;
        events.push_back(written_event(x, written_as::completed, *st.ctx));
      }
      ended.push_back(i->first);
      st.attempts.erase(i);
      continue;
    }
    x.phase = attempt::writing;
    x.outcome = outcome;
    to_write.push_back(std::move(outcome));
  }
  emit(st.events, std::move(events));
  if (!ended.empty())
    self->send(st.keeper, unhold_atom::value, std::move(ended));
  if (!to_write.empty())
    self->send(st.completer, record_atom::value, std::move(to_write));
  if (counts.total() > 0)
    self->send(st.dispatcher, done_atom::value, st.key, counts);
  pump(self);
  arm_idle_timer(self);
}

// Ends queued attempts without running them.
void end_queued(channel_ptr self, const std::vector<attempt_ref>& refs,
                cancel_reason why) {
  auto& st = self->state;
  std::vector<task_outcome> outcomes;
  for (auto& ref : refs) {
    auto i = st.attempts.find(ref);
    if (i == st.attempts.end() || i->second.phase != attempt::queued)
      continue;
    st.queue.erase(std::find(st.queue.begin(), st.queue.end(), ref));
    outcomes.push_back(
      unstarted_outcome(ref, why, st.ctx->filter_of(i->second.task.name)));
  }
  if (!outcomes.empty())
    finish(self, std::move(outcomes));
}

// Gives back every attempt that has not started.
void give_back(channel_ptr self) {
  std::vector<attempt_ref> refs{self->state.queue.begin(),
                                self->state.queue.end()};
  end_queued(self, refs, cancel_reason::shutdown);
}

// One route for cancels, deadlines, timeouts and lost leases: a queued
// attempt ends now, a started one is cancelled where it runs.
void stop_attempt(channel_ptr self, const attempt_ref& ref, cancel_reason why) {
  auto& st = self->state;
  auto i = st.attempts.find(ref);
  if (i == st.attempts.end())
    return;
  if (i->second.stopped_by == cancel_reason::none)
    i->second.stopped_by = why;
  if (i->second.phase == attempt::queued)
    end_queued(self, {ref}, why);
  else if (i->second.phase == attempt::started)
    cancel_started(self, ref, i->second, why);
}

// Queues claimed attempts and arms their deadlines, which count from the
// claim.
void queue_attempts(channel_ptr self, std::vector<claimed_task>& tasks) {
  auto& st = self->state;
  std::vector<attempt_ref> added_refs;
  for (auto& task : tasks) {
    attempt_ref ref{task.id, task.attempt};
    if (task.deadline_in)
      self->delayed_send(
        self, std::max(std::chrono::microseconds{0}, *task.deadline_in),
        deadline_atom::value, ref, cancel_reason::deadline);
    auto [i, added] = st.attempts.emplace(ref, attempt{});
    if (added) {
      added_refs.push_back(ref);
    } else {
      // A release keeps the attempt's number: given back and claimed again
      // before the release's confirmation came, the task has the same ref.
      // The claim saw the release committed: the entry is the new one's.
      if (!i->second.given_back())
        continue;
      count_ending(*st.ctx->metrics, i->second, i->second.outcome);
      i->second = attempt{};
    }
    i->second.task = std::move(task);
    st.queue.push_back(ref);
  }
  if (!added_refs.empty())
    self->send(st.keeper, hold_atom::value, std::move(added_refs));
}

channel_actor::behavior_type
channel(channel_ptr self, context_ptr ctx, std::string key,
        dispatcher_actor dispatcher, pool_actor pool, router_actor router,
        completer_actor completer, lease_keeper_actor keeper, bool paused) {
  auto& st = self->state;
  st.ctx = std::move(ctx);
  st.key = std::move(key);
  st.dispatcher = std::move(dispatcher);
  st.pool = std::move(pool);
  st.router = std::move(router);
  st.keeper = std::move(keeper);
  st.completer = std::move(completer);
  st.paused = paused;
  return {
    [=](run_atom, std::vector<claimed_task>& tasks) {
      queue_attempts(self, tasks);
      if (self->state.stopping || self->state.paused)
        give_back(self);
      else
        pump(self);
    },
    [=](cancel_atom, const uuid& id, cancel_reason why) {
      std::vector<attempt_ref> refs;
      for (auto& kvp : self->state.attempts)
        if (kvp.first.id == id)
          refs.push_back(kvp.first);
      for (auto& ref : refs)
        stop_attempt(self, ref, why);
    },
    [=](deadline_atom, const attempt_ref& ref, cancel_reason why) {
      stop_attempt(self, ref, why);
    },
    [=](done_atom, std::vector<task_outcome>& outcomes) {
      finish(self, std::move(outcomes));
    },
    [=](written_atom, const std::vector<written_attempt>& xs) {
      auto& st = self->state;
      auto failures = false;
      auto reporting = static_cast<bool>(st.events);
      std::vector<task_event> events;
      std::vector<attempt_ref> ended;
      for (auto& [ref, as] : xs) {
        auto i = st.attempts.find(ref);
        if (i == st.attempts.end() || i->second.phase != attempt::writing)
          continue;
        // The confirmation of a release whose attempt was claimed again
        // (queue_attempts) is not this attempt's.
        if (as == written_as::released && !i->second.given_back())
          continue;
        ended.push_back(ref);
        failures |= i->second.outcome.kind == task_outcome::failed;
        count_ending(*st.ctx->metrics, i->second, i->second.outcome);
        if (reporting)
          events.push_back(written_event(i->second, as, *st.ctx));
        st.attempts.erase(i);
      }
      emit(st.events, std::move(events));
      if (!ended.empty())
        self->send(st.keeper, unhold_atom::value, std::move(ended));
      // The next claim learns when the retries are due.
      if (failures)
        self->send(st.dispatcher, rescan_atom::value);
      arm_idle_timer(self);
    },
    [=](lost_atom, const std::vector<attempt_ref>& refs) {
      for (auto& ref : refs)
        stop_attempt(self, ref, cancel_reason::lost);
    },
    [=](peers_atom, pool_actor& x) {
      self->state.pool = std::move(x);
      fail_started(self, false);
    },
    [=](peers_atom, router_actor& x) {
      self->state.router = std::move(x);
      fail_started(self, true);
    },
    [=](peers_atom, completer_actor& x) {
      // What the old completer held may be lost: write it again (writes
      // are fenced, a second one changes nothing).
      auto& st = self->state;
      st.completer = std::move(x);
      std::vector<task_outcome> again;
      for (auto& kvp : st.attempts)
        if (kvp.second.phase == attempt::writing)
          again.push_back(kvp.second.outcome);
      if (!again.empty())
        self->send(st.completer, record_atom::value, std::move(again));
    },
    [=](peers_atom, lease_keeper_actor& x) {
      // A new keeper knows nothing: it hears every attempt held here.
      auto& st = self->state;
      st.keeper = std::move(x);
      std::vector<attempt_ref> refs;
      refs.reserve(st.attempts.size());
      for (auto& kvp : st.attempts)
        refs.push_back(kvp.first);
      if (!refs.empty())
        self->send(st.keeper, hold_atom::value, std::move(refs));
    },
    [=](events_atom, event_sink_actor& x) {
      self->state.events = std::move(x);
    },
    [=](pause_atom, bool on) {
      self->state.paused = on;
      if (on)
        give_back(self);
      else
        pump(self);
    },
    [=](stop_atom) {
      self->state.stopping = true;
      give_back(self);
    },
    [=](abandon_atom) {
      auto& st = self->state;
      for (auto& kvp : st.attempts)
        if (kvp.second.phase == attempt::started)
          cancel_started(self, kvp.first, kvp.second, cancel_reason::shutdown);
    },
    [=](idle_atom, std::uint64_t generation) {
      auto& st = self->state;
      if (generation != st.idle_generation || !st.attempts.empty())
        return;
      self
        ->request(st.dispatcher, st.ctx->request_timeout(), retire_atom::value,
                  st.key)
        .then(
          [=](bool agreed) {
            if (agreed)
              self->quit();
          },
          [=](caf::error&) {
            // The dispatcher is gone or busy: try again when idle next.
            arm_idle_timer(self);
          });
    },
  };
}

} // namespace

std::string channel_name_of(const std::string& key) {
  return key.substr(0, key.find('\x1f'));
}

channel_actor spawn_channel(caf::actor_system& sys, context_ptr ctx,
                            std::string key, dispatcher_actor dispatcher,
                            pool_actor pool, router_actor router,
                            completer_actor completer,
                            lease_keeper_actor keeper, bool paused) {
  return sys.spawn(channel, std::move(ctx), std::move(key),
                   std::move(dispatcher), std::move(pool), std::move(router),
                   std::move(completer), std::move(keeper), paused);
}

} // namespace cafmq::actors
