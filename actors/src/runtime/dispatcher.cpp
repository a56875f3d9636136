// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/actors/detail/dispatcher.hpp"

#include <algorithm>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>

#include <caf/all.hpp>

#include "cafmq/actors/detail/channel.hpp"
#include "cafmq/actors/detail/event_hub.hpp"
#include "cafmq/error.hpp"
#include "runtime/claim_sizer.hpp"
#include "runtime/dispatcher_state.hpp"

namespace cafmq::actors {

namespace dispatcher_impl {

void check_drained(dispatcher_ptr self) {
  auto& st = self->state;
  if (!st.draining || st.held > 0 || st.claiming || st.claiming_ids
      || st.reserved > 0)
    return;
  for (auto& rp : st.drained)
    rp.deliver(true);
  st.drained.clear();
}

// Longest wait a fair claim reports for a limited channel whose ready
// tasks wait for a running one to end (claim_limited.sql).
constexpr auto limited_recheck = std::chrono::milliseconds{200};

void claim_next(dispatcher_ptr self, bool fair);
void claim_by_id(dispatcher_ptr self, std::vector<uuid> ids);

// Arms a wake-up after `delay` unless an earlier one is armed.
void wake_after(dispatcher_ptr self, std::chrono::microseconds delay) {
  auto& st = self->state;
  auto at = self->clock().now() + delay;
  if (st.wake_at && *st.wake_at <= at)
    return;
  st.wake_at = at;
  self->delayed_send(self, delay, wake_atom::value, ++st.generation);
}

// Tasks the claim ended instead of running them (cancelled, deadline
// passed, the last attempt's lease lapsed, poison): counted and reported
// like endings that a handler's outcome wrote.
void report_endings(dispatcher_ptr self,
                    const std::vector<claim_ending>& endings) {
  auto& st = self->state;
  auto& metrics = *st.ctx->metrics;
  std::vector<task_event> events;
  for (auto& x : endings) {
    auto cancelled = x.state == "cancelled";
    metrics.ended(metrics.of(x.task.name),
                  cancelled ? runtime_metrics::ending::cancelled
                            : runtime_metrics::ending::failed);
    if (!st.events)
      continue;
    auto event = make_event(
      cancelled ? task_event::cancelled : task_event::failed, x.task, *st.ctx);
    event.error = x.error;
    events.push_back(std::move(event));
  }
  emit(st.events, std::move(events));
}

// Hands what a claim (or a direct dispatch) returned to the channel actors:
// one message per channel, its attempts in claim order (while draining, the
// channels give them back at once). Counts and reports it, and routes the
// cancels that came meanwhile once no claim is in flight.
void hand_out(dispatcher_ptr self, claim_result& result) {
  auto& st = self->state;
  auto& metrics = *st.ctx->metrics;
  std::vector<std::pair<channel_entry*, std::vector<claimed_task>>> batches;
  std::unordered_map<channel_entry*, size_t> batch_of;
  for (auto& task : result.tasks)
    metrics.claimed(metrics.of(task.name));
  for (auto& [k, waited] : result.pickup)
    metrics.picked_up(metrics.of(result.tasks.at(k).name), waited);
  if (!result.ended.empty())
    report_endings(self, result.ended);
  for (auto& task : result.tasks) {
    auto& entry
      = channel_of(self, key_of(task.channel_name, task.channel_args));
    ++entry.held;
    ++st.held;
    auto [i, added] = batch_of.emplace(&entry, batches.size());
    if (added)
      batches.emplace_back(&entry, std::vector<claimed_task>{});
    batches[i->second].second.push_back(std::move(task));
  }
  for (auto& batch : batches)
    self->send(batch.first->handle, run_atom::value, std::move(batch.second));
  if (!st.claiming && !st.claiming_ids && st.reserved == 0)
    route_deferred_cancels(self);
}

// A claim returned (its flag is reset): hands out what it took.
void claim_returned(dispatcher_ptr self, claim_result& result) {
  auto& st = self->state;
  st.error_backoff = std::chrono::milliseconds{0};
  st.ctx->metrics->claim_returned();
  hand_out(self, result);
}

// A claim failed (its flag is reset): back off, then claim fairly.
void claim_failed(dispatcher_ptr self, const caf::error& err) {
  auto& st = self->state;
  st.idle = false;
  // The claim after the backoff is a fair one: it takes them too.
  st.named.clear();
  st.unresolved.clear();
  if (!st.claiming && !st.claiming_ids && st.reserved == 0)
    route_deferred_cancels(self);
  if (st.draining) {
    check_drained(self);
    return;
  }
  st.error_backoff
    = std::min(std::chrono::milliseconds{5000},
               std::max(std::chrono::milliseconds{100}, st.error_backoff * 2));
  st.ctx->log(log_level::warning, "claim failed, retrying",
              {{"retry_ms", st.error_backoff.count()}, {"error", render(err)}});
  wake_after(self, st.error_backoff);
}

// A claim of one lane (fair, or by id) returned or failed: answers the
// pauses that waited for it and for no other claim.
void lane_returned(dispatcher_ptr self, bool fair) {
  auto& waiting = self->state.pauses_waiting;
  for (auto& x : waiting)
    (fair ? x.fair : x.ids) = false;
  auto answered = std::stable_partition(
    waiting.begin(), waiting.end(), [](auto& x) { return x.fair || x.ids; });
  for (auto i = answered; i != waiting.end(); ++i)
    i->rp.deliver(true);
  waiting.erase(answered, waiting.end());
}

// Removes from `ids` the tasks that `result` took or ended.
void drop_taken(std::vector<uuid>& ids, const claim_result& result) {
  auto taken = [&](const uuid& id) {
    return std::any_of(result.tasks.begin(), result.tasks.end(),
                       [&](const claimed_task& x) { return x.id == id; })
           || std::any_of(
             result.ended.begin(), result.ended.end(),
             [&](const claim_ending& x) { return x.task.id == id; });
  };
  ids.erase(std::remove_if(ids.begin(), ids.end(), taken), ids.end());
}

// A fair claim returned.
void claimed(dispatcher_ptr self, int limit, claim_result& result) {
  auto& st = self->state;
  st.claiming = false;
  // What a claim by id in flight may have missed because this claim held
  // it locked.
  if (st.claiming_ids)
    for (auto& x : result.tasks)
      st.fair_took.push_back(x.id);
  // Tasks a claim by id missed while this claim was in flight: those it
  // took need no other claim.
  bool missed = false;
  if (!st.unresolved.empty()) {
    drop_taken(st.unresolved, result);
    missed = !st.unresolved.empty();
    st.unresolved.clear();
  }
  auto full = static_cast<int>(result.tasks.size()) == limit;
  st.sizer->claimed(limit, static_cast<int>(result.tasks.size()), st.held);
  claim_returned(self, result);
  lane_returned(self, true);
  if (st.draining) {
    check_drained(self);
    return;
  }
  std::chrono::microseconds cap = st.ctx->cfg.max_poll_wait;
  auto wait = result.wait ? std::min(*result.wait, cap) : cap;
  // An empty claim never re-arms at once, whatever the database said.
  if (result.tasks.empty())
    wait = std::max(wait, std::chrono::microseconds{10000});
  wake_after(self, wait);
  // Claim again at once only after a productive claim: a full batch, or a
  // round-robin walk that was cut short.
  bool more = missed
              || (!result.tasks.empty()
                  && (full || (result.wait && result.wait->count() == 0)));
  // Idle: the claim took every task it could take now (not a full batch,
  // nor a walk cut short), and what becomes ready from now on wakes the
  // runner (a notification, or the timer at the next due time). A limited
  // channel's ready tasks may get a slot whenever a task of it ends: its
  // wait is at most 200 ms (claim_limited.sql), so a wait that short keeps
  // the claim after each ending.
  st.idle = !full && (!result.wait || *result.wait > limited_recheck);
  claim_next(self, more);
}

// After a claim returned: a fair claim if it asked for one (`fair`) or a
// wake-up came meanwhile, else a claim by id of what spawns named
// meanwhile.
void claim_next(dispatcher_ptr self, bool fair) {
  auto& st = self->state;
  if (fair || st.claim_again)
    maybe_claim(self);
  else if (!st.named.empty())
    claim_by_id(self, std::exchange(st.named, {}));
}

void maybe_claim(dispatcher_ptr self) {
  auto& st = self->state;
  if (st.draining)
    return;
  if (st.claiming) {
    st.claim_again = true;
    return;
  }
  st.claim_again = false;
  auto limit = st.sizer->limit(self->clock().now(),
                               st.held + st.reserved + st.ids_asked);
  if (limit == 0) {
    // No room now: an ending makes room, so it claims.
    st.idle = false;
    return;
  }
  st.named.clear();
  st.claiming = true;
  st.request.limit = limit;
  st.request.paused.assign(st.paused.begin(), st.paused.end());
  self
    ->request(st.claim_db, st.ctx->request_timeout(), claim_atom::value,
              st.request)
    .then([=](claim_result& result) { claimed(self, limit, result); },
          [=](caf::error& err) {
            self->state.claiming = false;
            lane_returned(self, true);
            claim_failed(self, err);
          });
}

// A claim by id returned. Its wait is 0 when a named task is still pending
// but was not taken: held back by a rule the fair claim applies, or locked
// by another claim. If that claim is this runner's fair claim in flight (or
// one that returned meanwhile), it took the task; else a fair claim
// follows. Without that account, under a held snapshot (fair claims slow,
// and locking what the claims by id ask for) the fair claims ran back to
// back.
void claimed_by_id(dispatcher_ptr self, std::vector<uuid> asked,
                   claim_result& result) {
  auto& st = self->state;
  st.claiming_ids = false;
  st.ids_asked = 0;
  auto fair = false;
  if (result.wait && result.wait->count() == 0) {
    drop_taken(asked, result);
    if (st.claiming) {
      st.unresolved.insert(st.unresolved.end(), asked.begin(), asked.end());
    } else {
      auto by_fair = [&](const uuid& id) {
        return std::find(st.fair_took.begin(), st.fair_took.end(), id)
               != st.fair_took.end();
      };
      asked.erase(std::remove_if(asked.begin(), asked.end(), by_fair),
                  asked.end());
      fair = !asked.empty();
    }
  }
  st.fair_took.clear();
  claim_returned(self, result);
  lane_returned(self, false);
  if (st.draining)
    check_drained(self);
  else
    claim_next(self, fair);
}

// Most task ids that wait in `named` for room; beyond them the runner
// forgets the ids, and the next ending claims fairly.
constexpr size_t max_named = 8192;

// A spawn's notification named these tasks of a channel this runner
// serves (none: a notification that names no task, so a fair claim):
// claim by id (cafmq.claim_ids) as many as the runner may hold now; the
// rest wait in `named` until an ending makes room, and are claimed by id
// then. A busy runner used to claim fairly instead, which took no more
// tasks (the same room) and, under a held snapshot, made each such claim
// slow, its batch full, and the next one follow at once. A claim by id
// leaves the wake-up timer and the claim's sizing alone; the fair claim
// follows it when it says so (a named task was held back or locked) or
// when asked for meanwhile.
void claim_by_id(dispatcher_ptr self, std::vector<uuid> ids) {
  auto& st = self->state;
  if (st.draining)
    return;
  if (ids.empty()) {
    maybe_claim(self);
    return;
  }
  auto room = st.claiming_ids
                ? 0
                : st.sizer->limit(self->clock().now(), st.held + st.reserved);
  if (room < static_cast<int>(ids.size())) {
    auto n = static_cast<size_t>(std::max(room, 0));
    st.named.insert(st.named.end(), ids.begin() + n, ids.end());
    ids.resize(n);
    if (st.named.size() > max_named) {
      st.named.clear();
      st.idle = false;
    }
    if (ids.empty())
      return;
  }
  st.claiming_ids = true;
  st.ids_asked = static_cast<int>(ids.size());
  st.fair_took.clear();
  st.request.paused.assign(st.paused.begin(), st.paused.end());
  st.request.ids = std::move(ids);
  auto sent = self->request(st.ids_db, st.ctx->request_timeout(),
                            claim_atom::value, st.request);
  std::vector<uuid> asked;
  asked.swap(st.request.ids);
  sent.then(
    [=](claim_result& result) mutable {
      claimed_by_id(self, std::move(asked), result);
    },
    [=](caf::error& err) {
      self->state.claiming_ids = false;
      self->state.ids_asked = 0;
      lane_returned(self, false);
      claim_failed(self, err);
    });
}

// Direct dispatch: a spawn of `name` through the runtime asks for a slot.
// It gets one if this runner claims that name and an attempt claimed now
// would start now (a handler here or on a joined worker is free, counting
// the slots given to other direct dispatches): the claim to make in the
// spawn's transaction, whose result comes back as (spawn, claim_result).
// Else the limit is 0, and the spawn takes the normal path.
claim_request reserve(dispatcher_ptr self, const std::string& name) {
  auto& st = self->state;
  claim_request result;
  result.limit = 0;
  auto& names = st.request.names;
  if (st.draining || std::find(names.begin(), names.end(), name) == names.end()
      || st.sizer->free_slots(st.held + st.reserved) < 1)
    return result;
  ++st.reserved;
  result = st.request;
  result.limit = 1;
  result.paused.assign(st.paused.begin(), st.paused.end());
  return result;
}

template <class Handle>
void forward_to_channels(dispatcher_ptr self, const Handle& x) {
  for (auto& kvp : *self->state.channels)
    self->send(kvp.second.handle, peers_atom::value, x);
}

void forward_to_channels(dispatcher_ptr self, events_atom,
                         const event_sink_actor& x) {
  for (auto& kvp : *self->state.channels)
    self->send(kvp.second.handle, events_atom::value, x);
}

dispatcher_actor::behavior_type
dispatcher(dispatcher_ptr self, context_ptr ctx, database_actor claim_db,
           database_actor ids_db, pool_actor pool, router_actor router,
           completer_actor completer, lease_keeper_actor keeper,
           supervisor_actor runtime) {
  auto& st = self->state;
  st.ctx = std::move(ctx);
  st.claim_db = std::move(claim_db);
  st.ids_db = std::move(ids_db);
  st.pool = std::move(pool);
  st.router = std::move(router);
  st.completer = std::move(completer);
  st.keeper = std::move(keeper);
  st.runtime = std::move(runtime);
  auto& cfg = st.ctx->cfg;
  st.sizer.emplace(cfg);
  st.request.node = cfg.node;
  st.request.names = cfg.task_names();
  st.request.channels = cfg.channels;
  st.request.lease = cfg.lease;
  st.request.max_lost = cfg.max_lost_attempts;
  // One claimed task in 16 reports its pickup latency (all of them would
  // cost a large claim an index lookup per task), for a served histogram.
  st.request.pickup_every = cfg.metrics_listen.empty() ? 0 : 16;
  self->attach_functor([channels = st.channels](const caf::error&) {
    for (auto& kvp : *channels)
      caf::anon_send_exit(kvp.second.handle, caf::exit_reason::user_shutdown);
  });
  self->set_down_handler([=](caf::down_msg& msg) { channel_down(self, msg); });
  self->send(self, rescan_atom::value);
  return {
    [=](ready_atom, const std::string& channel, std::vector<uuid>& ids) {
      auto& chans = self->state.ctx->cfg.channels;
      if (chans.empty()
          || std::find(chans.begin(), chans.end(), channel) != chans.end())
        claim_by_id(self, std::move(ids));
    },
    [=](rescan_atom) { maybe_claim(self); },
    [=](spawn_atom, const std::string& name) { return reserve(self, name); },
    [=](spawn_atom, claim_result& result) {
      auto& st = self->state;
      if (st.reserved > 0)
        --st.reserved;
      hand_out(self, result);
      if (st.draining)
        check_drained(self);
    },
    [=](renew_atom) {
      maybe_claim(self);
      if (self->state.keeper)
        self->send(self->state.keeper, renew_atom::value);
    },
    [=](cancel_atom, const std::string& name, const std::string& args,
        const uuid& id) {
      auto& st = self->state;
      if (st.claiming || st.claiming_ids || st.reserved > 0)
        st.deferred_cancels.emplace_back(name, args, id);
      else
        route_cancel(self, name, args, id);
    },
    [=](wake_atom, std::uint64_t generation) {
      auto& st = self->state;
      if (generation != st.generation)
        return;
      st.wake_at.reset();
      maybe_claim(self);
    },
    [=](done_atom, const std::string& key, const finished_counts& counts) {
      auto& st = self->state;
      auto n = counts.total();
      st.held -= n;
      if (auto i = st.channels->find(key); i != st.channels->end())
        i->second.held -= n;
      st.sizer->finished(n - counts.released);
      if (st.draining)
        check_drained(self);
      else {
        // Room for the tasks named while the runner was busy.
        if (!st.named.empty() && !st.claiming_ids)
          claim_by_id(self, std::exchange(st.named, {}));
        if (!st.idle || counts.released > 0)
          maybe_claim(self);
      }
    },
    [=](retire_atom, const std::string& key) {
      auto& chans = *self->state.channels;
      auto i = chans.find(key);
      if (i == chans.end() || i->second.held > 0)
        return false;
      self->demonitor(i->second.handle.address());
      chans.erase(i);
      return true;
    },
    [=](channels_atom) {
      std::vector<channel_actor> result;
      result.reserve(self->state.channels->size());
      for (auto& kvp : *self->state.channels)
        result.push_back(kvp.second.handle);
      return result;
    },
    // A pause is answered once no claim that asked without it is in flight:
    // from then on no claim of this runner takes a task of that channel (a
    // claim in flight may take one spawned after the pause: its channel
    // gives it back, but a watcher saw it running).
    [=](pause_atom, const std::string& name, bool on) -> caf::result<bool> {
      auto& st = self->state;
      if (on)
        st.paused.insert(name);
      else
        st.paused.erase(name);
      for (auto& kvp : *st.channels)
        if (channel_name_of(kvp.first) == name)
          self->send(kvp.second.handle, pause_atom::value, on);
      if (!on) {
        maybe_claim(self);
        return true;
      }
      if (!st.claiming && !st.claiming_ids)
        return true;
      auto rp = self->make_response_promise<bool>();
      st.pauses_waiting.push_back({rp, st.claiming, st.claiming_ids});
      return rp;
    },
    [=](offer_atom, const std::vector<std::string>& offered,
        std::int32_t capacity) {
      // Joined workers run these names: claim them too, and hold as many
      // more attempts as they run at once.
      auto& st = self->state;
      std::set<std::string> names{offered.begin(), offered.end()};
      for (auto& name : st.ctx->cfg.task_names())
        names.insert(name);
      st.request.names.assign(names.begin(), names.end());
      st.sizer->capacity(capacity);
      maybe_claim(self);
    },
    [=](events_atom, event_sink_actor& x) {
      forward_to_channels(self, events_atom::value, x);
      self->state.events = std::move(x);
    },
    [=](peers_atom, database_actor& x) { self->state.claim_db = std::move(x); },
    [=](peers_atom, ready_atom, database_actor& x) {
      self->state.ids_db = std::move(x);
    },
    [=](peers_atom, pool_actor& x) {
      forward_to_channels(self, x);
      self->state.pool = std::move(x);
    },
    [=](peers_atom, router_actor& x) {
      forward_to_channels(self, x);
      self->state.router = std::move(x);
    },
    [=](peers_atom, completer_actor& x) {
      forward_to_channels(self, x);
      self->state.completer = std::move(x);
    },
    [=](peers_atom, lease_keeper_actor& x) {
      forward_to_channels(self, x);
      self->state.keeper = std::move(x);
    },
    [=](drain_atom) -> caf::typed_response_promise<bool> {
      auto& st = self->state;
      auto rp = self->make_response_promise<bool>();
      st.drained.push_back(rp);
      if (!st.draining) {
        st.draining = true;
        // Attempts that have not started go back to the queue now.
        self->send(st.pool, stop_atom::value);
        self->send(st.router, stop_atom::value);
        for (auto& kvp : *st.channels)
          self->send(kvp.second.handle, stop_atom::value);
      }
      check_drained(self);
      return rp;
    },
    [=](abandon_atom) {
      for (auto& kvp : *self->state.channels)
        self->send(kvp.second.handle, abandon_atom::value);
    },
    [=](stats_atom) {
      runner_stats result;
      result.running = self->state.held;
      result.channels = static_cast<int>(self->state.channels->size());
      return result;
    },
  };
}

} // namespace dispatcher_impl

dispatcher_actor spawn_dispatcher(caf::actor_system& sys, context_ptr ctx,
                                  database_actor claim_db,
                                  database_actor ids_db, pool_actor pool,
                                  router_actor router,
                                  completer_actor completer,
                                  lease_keeper_actor keeper,
                                  supervisor_actor runtime) {
  return sys.spawn(dispatcher_impl::dispatcher, std::move(ctx),
                   std::move(claim_db), std::move(ids_db), std::move(pool),
                   std::move(router), std::move(completer), std::move(keeper),
                   std::move(runtime));
}

} // namespace cafmq::actors
