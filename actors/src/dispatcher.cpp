#include "cafmq/actors/dispatcher.hpp"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include <caf/all.hpp>

#include "cafmq/actors/channel.hpp"
#include "cafmq/actors/completer.hpp"
#include "cafmq/actors/listener.hpp"
#include "cafmq/actors/maintenance.hpp"
#include "cafmq/actors/messages.hpp"
#include "cafmq/actors/pool.hpp"
#include "cafmq/error.hpp"

namespace cafmq::actors {

namespace {

struct channel_entry {
  caf::actor handle;
  // Attempts sent to the channel that it has not finished yet.
  int outstanding = 0;
};

using channel_map = std::unordered_map<std::string, channel_entry>;

struct dispatcher_state {
  runner_config cfg;
  caf::actor claim_db;
  caf::actor write_db;
  caf::actor completer;
  caf::actor listener;
  caf::actor pool;
  caf::actor maintenance;
  // Shared with the exit hook, which stops the channels however we end.
  std::shared_ptr<channel_map> channels = std::make_shared<channel_map>();
  // Attempts handed to channels and not finished, with their channel key.
  // Keyed by attempt: after a lost lease we may claim our own task again.
  std::unordered_map<attempt_ref, std::string> running;
  // Attempts whose handler ended and whose outcome the completer has not
  // written yet: their leases are still renewed, so that a slow write cannot
  // let another runner run them again.
  std::unordered_set<attempt_ref> writing;
  claim_request request;
  bool claiming = false;
  bool claim_again = false;
  std::chrono::milliseconds error_backoff{0};
  std::optional<caf::actor_clock::time_point> wake_at;
  int generation = 0;
  bool stopping = false;
  // Throughput estimate for the claim-ahead window: attempts finished since
  // rate_since, and the smoothed rate in attempts per second.
  std::optional<caf::actor_clock::time_point> rate_since;
  long long finished_since = 0;
  double rate = 0;
  // Claim-ahead while starting or after a burst: grows each time a full
  // claim finds the runner starved (quadrupled: a few claims reach the cap),
  // dropped after a claim that was not full.
  int ramp = 0;
  std::vector<caf::response_promise> stop_promises;
  runner_stats stats;
  static inline const char* name = "cafmq.dispatcher";
};

using dispatcher_actor = caf::stateful_actor<dispatcher_state>;

void maybe_claim(dispatcher_actor* self);

// Fires the tokens of the attempts of task `id` running here; false if none.
bool cancel_task(dispatcher_actor* self, const uuid& id, cancel_reason why) {
  auto found = false;
  for (auto& kvp : self->state.running)
    if (kvp.first.id == id) {
      self->send(self->state.pool, cancel_atom::value, kvp.first, why);
      found = true;
    }
  return found;
}

void finish(dispatcher_actor* self);

// Arms a wake-up after `delay` unless an earlier one is armed.
void wake_after(dispatcher_actor* self, std::chrono::microseconds delay) {
  auto& st = self->state;
  auto at = self->clock().now() + delay;
  if (st.wake_at && *st.wake_at <= at)
    return;
  st.wake_at = at;
  self->delayed_send(self, delay, poll_atom::value, ++st.generation);
}

void claimed(dispatcher_actor* self, int limit, claim_result& result) {
  auto& st = self->state;
  st.claiming = false;
  st.error_backoff = std::chrono::milliseconds{0};
  ++st.stats.claims;
  if (st.stopping) {
    // Too late to start them: give them back at once.
    std::vector<task_outcome> outcomes;
    for (auto& task : result.tasks) {
      task_outcome outcome;
      outcome.ref = attempt_ref{task.id, task.attempt};
      outcome.kind = task_outcome::released;
      ++st.stats.released;
      outcomes.push_back(std::move(outcome));
    }
    if (!outcomes.empty())
      self->send(st.completer, done_atom::value, std::move(outcomes));
    if (st.running.empty())
      finish(self);
    return;
  }
  // Starved: everything held ran before this claim came back, so the next
  // claims may take more (see prefetch_now).
  auto full = static_cast<int>(result.tasks.size()) == limit;
  if (full && static_cast<int>(st.running.size()) < st.cfg.min_concurrency)
    st.ramp = std::min(std::max(0, st.cfg.prefetch),
                       std::max(st.cfg.max_concurrency, st.ramp * 4));
  else if (!full)
    st.ramp = 0;
  // One message per channel: its attempts in claim order.
  auto now = self->clock().now();
  std::vector<std::pair<channel_entry*, std::vector<claimed_task>>> batches;
  std::unordered_map<channel_entry*, size_t> batch_of;
  for (auto& task : result.tasks) {
    task.received = now;
    auto key = task.channel_name + '\x1f' + task.channel_args;
    auto& entry = (*st.channels)[key];
    if (!entry.handle)
      entry.handle
        = spawn_channel(self->system(), key, st.cfg.channel_concurrency,
                        st.cfg.channel_idle_timeout, st.pool,
                        caf::actor_cast<caf::actor>(self));
    ++entry.outstanding;
    st.running.emplace(attempt_ref{task.id, task.attempt}, std::move(key));
    ++st.stats.claimed;
    auto [i, added] = batch_of.emplace(&entry, batches.size());
    if (added)
      batches.emplace_back(&entry, std::vector<claimed_task>{});
    batches[i->second].second.push_back(std::move(task));
  }
  for (auto& batch : batches)
    self->send(batch.first->handle, run_atom::value, std::move(batch.second));
  std::chrono::microseconds cap = st.cfg.max_poll_wait;
  auto wait = result.wait ? std::min(*result.wait, cap) : cap;
  // An empty claim never re-arms at once, whatever the database said.
  if (result.tasks.empty())
    wait = std::max(wait, std::chrono::microseconds{10000});
  wake_after(self, wait);
  // Claim again at once only after a productive claim: a full batch, or a
  // round-robin walk that was cut short.
  bool more = !result.tasks.empty()
              && (static_cast<int>(result.tasks.size()) == limit
                  || (result.wait && result.wait->count() == 0));
  if (more || st.claim_again)
    maybe_claim(self);
}

// How many attempts to hold beyond max_concurrency: what this runner
// finishes in prefetch_window at its recent rate, at most prefetch.
int prefetch_now(dispatcher_actor* self) {
  auto& st = self->state;
  auto cap = std::max(0, st.cfg.prefetch);
  if (st.cfg.prefetch_window.count() == 0)
    return cap;
  auto now = self->clock().now();
  if (!st.rate_since) {
    st.rate_since = now;
  } else {
    auto elapsed = std::chrono::duration<double>(now - *st.rate_since).count();
    if (elapsed >= 0.02) {
      auto sample = static_cast<double>(st.finished_since) / elapsed;
      st.rate = 0.5 * st.rate + 0.5 * sample;
      st.finished_since = 0;
      st.rate_since = now;
    }
  }
  auto window = std::chrono::duration<double>(st.cfg.prefetch_window).count();
  auto by_rate = static_cast<int>(std::min<double>(cap, st.rate * window));
  return std::min(cap, std::max(by_rate, st.ramp));
}

void maybe_claim(dispatcher_actor* self) {
  auto& st = self->state;
  if (st.stopping)
    return;
  if (st.claiming) {
    st.claim_again = true;
    return;
  }
  st.claim_again = false;
  // Attempts held: running, or claimed ahead and waiting for a slot. Claim
  // when a quarter of the buffer is free (or fewer than min_concurrency
  // run), so that claims come in large batches and the next one is under
  // way before the held attempts run out.
  auto held = static_cast<int>(st.running.size());
  auto prefetch = prefetch_now(self);
  auto limit = st.cfg.max_concurrency + prefetch - held;
  if (held >= st.cfg.min_concurrency
      && limit < std::max(st.cfg.min_concurrency, prefetch / 4))
    return;
  st.claiming = true;
  st.request.limit = limit;
  self->request(st.claim_db, caf::infinite, claim_atom::value, st.request)
    .then([=](claim_result& result) { claimed(self, limit, result); },
          [=](caf::error& err) {
            auto& st = self->state;
            st.claiming = false;
            if (st.stopping) {
              if (st.running.empty())
                finish(self);
              return;
            }
            st.error_backoff = std::min(
              std::chrono::milliseconds{5000},
              std::max(std::chrono::milliseconds{100}, st.error_backoff * 2));
            aout(self) << "cafmq: claim failed, retrying in "
                       << st.error_backoff.count() << " ms: " << render(err)
                       << std::endl;
            wake_after(self, st.error_backoff);
          });
}

void renew_leases(dispatcher_actor* self) {
  auto& st = self->state;
  if (st.running.empty() && st.writing.empty())
    return;
  std::vector<attempt_ref> refs;
  refs.reserve(st.running.size() + st.writing.size());
  for (auto& kvp : st.running)
    refs.push_back(kvp.first);
  refs.insert(refs.end(), st.writing.begin(), st.writing.end());
  self
    ->request(st.write_db, caf::infinite, renew_atom::value, refs, st.cfg.lease)
    .then(
      [=](const std::vector<lease_state>& owned) {
        // Cancels whose notification was missed arrive here; an attempt no
        // longer owned is told to stop. Attempts that ended while the
        // renewal ran are neither.
        auto& st = self->state;
        std::unordered_set<uuid> kept;
        for (auto& x : owned) {
          kept.insert(x.id);
          if (x.cancel_requested
              && cancel_task(self, x.id, cancel_reason::cancelled))
            ++st.stats.cancels_at_renewal;
        }
        size_t lost = 0;
        for (auto& ref : refs) {
          if (kept.count(ref.id) == 0 && st.running.count(ref) > 0) {
            ++lost;
            self->send(st.pool, cancel_atom::value, ref, cancel_reason::lost);
          }
        }
        if (lost > 0)
          aout(self) << "cafmq: " << lost
                     << " running attempts lost their lease" << std::endl;
      },
      [=](caf::error& err) {
        aout(self) << "cafmq: renewing leases failed: " << render(err)
                   << std::endl;
      });
}

void finish(dispatcher_actor* self) {
  auto& st = self->state;
  // Bounded: with the database gone, unwritten outcomes are left to lease
  // expiry rather than blocking the stop forever.
  self->request(st.completer, st.cfg.shutdown_timeout, flush_atom::value)
    .then(
      [=](bool) {
        auto& st = self->state;
        for (auto& rp : st.stop_promises)
          rp.deliver(true);
        st.stop_promises.clear();
        self->quit();
      },
      [=](caf::error& err) {
        aout(self) << "cafmq: flushing outcomes failed: " << render(err)
                   << std::endl;
        for (auto& rp : self->state.stop_promises)
          rp.deliver(err);
        self->quit(err);
      });
}

caf::behavior dispatcher(dispatcher_actor* self, runner_config cfg,
                         caf::actor claim_db, caf::actor write_db,
                         bool with_listener) {
  auto& st = self->state;
  st.cfg = std::move(cfg);
  st.claim_db = std::move(claim_db);
  st.write_db = std::move(write_db);
  st.request.node = st.cfg.node;
  st.request.names = st.cfg.task_names();
  st.request.channels = st.cfg.channels;
  st.request.lease = st.cfg.lease;
  auto& sys = self->system();
  st.completer
    = spawn_completer(sys, st.write_db, caf::actor_cast<caf::actor>(self));
  st.pool
    = spawn_pool(sys, st.cfg, st.write_db, caf::actor_cast<caf::actor>(self));
  st.maintenance
    = spawn_maintenance(sys, st.write_db, st.cfg.maintenance_interval,
                        st.cfg.retention, st.cfg.prune_batch);
  if (with_listener)
    st.listener = spawn_listener(sys, st.cfg.database_url,
                                 caf::actor_cast<caf::actor>(self));
  // Children go down with the dispatcher, however it ends.
  std::vector<caf::actor> children;
  for (auto& child : {st.pool, st.completer, st.maintenance, st.listener,
                      st.claim_db, st.write_db})
    if (child)
      children.push_back(child);
  self->attach_functor([children, channels = st.channels](const caf::error&) {
    for (auto& child : children)
      caf::anon_send_exit(child, caf::exit_reason::user_shutdown);
    for (auto& kvp : *channels)
      caf::anon_send_exit(kvp.second.handle, caf::exit_reason::user_shutdown);
  });
  self->send(self, rescan_atom::value);
  self->delayed_send(self, st.cfg.keep_alive_interval, tick_atom::value);
  return {
    [=](ready_atom, const std::string& channel) {
      auto& chans = self->state.cfg.channels;
      if (chans.empty()
          || std::find(chans.begin(), chans.end(), channel) != chans.end())
        maybe_claim(self);
    },
    [=](rescan_atom) { maybe_claim(self); },
    [=](cancel_atom, const std::string& payload) {
      // A cancel was requested somewhere; it matters if we run the task.
      auto id = uuid::parse(payload);
      if (id)
        cancel_task(self, *id, cancel_reason::cancelled);
    },
    [=](poll_atom, int generation) {
      auto& st = self->state;
      if (generation != st.generation)
        return;
      st.wake_at.reset();
      maybe_claim(self);
    },
    [=](tick_atom) {
      renew_leases(self);
      self->delayed_send(self, self->state.cfg.keep_alive_interval,
                         tick_atom::value);
    },
    [=](done_atom, std::vector<task_outcome>& outcomes) {
      auto& st = self->state;
      std::vector<task_outcome> to_write;
      to_write.reserve(outcomes.size());
      for (auto& outcome : outcomes) {
        auto i = st.running.find(outcome.ref);
        if (i == st.running.end())
          continue;
        auto channel = st.channels->find(i->second);
        if (channel != st.channels->end())
          --channel->second.outstanding;
        st.running.erase(i);
        if (outcome.kind == task_outcome::failed)
          ++st.stats.failed;
        else if (outcome.kind == task_outcome::released)
          ++st.stats.released;
        else
          ++st.stats.completed;
        if (outcome.kind != task_outcome::released)
          ++st.finished_since;
        if (outcome.kind != task_outcome::recorded)
          st.writing.insert(outcome.ref);
        to_write.push_back(std::move(outcome));
      }
      if (to_write.empty())
        return;
      self->send(st.completer, done_atom::value, std::move(to_write));
      if (st.stopping) {
        if (st.running.empty())
          finish(self);
        return;
      }
      maybe_claim(self);
    },
    [=](written_atom, const std::vector<attempt_ref>& refs) {
      for (auto& ref : refs)
        self->state.writing.erase(ref);
    },
    [=](stop_atom) -> caf::result<bool> {
      auto& st = self->state;
      auto rp = self->make_response_promise();
      st.stop_promises.push_back(rp);
      if (!st.stopping) {
        st.stopping = true;
        // Attempts that have not started go back to the queue now.
        self->send(st.pool, stop_atom::value);
        for (auto& kvp : *st.channels)
          self->send(kvp.second.handle, stop_atom::value);
        if (st.running.empty() && !st.claiming)
          finish(self);
        else
          self->delayed_send(self, st.cfg.shutdown_timeout,
                             timeout_atom::value);
      }
      return caf::delegated<bool>{};
    },
    [=](timeout_atom) {
      // Handlers still running are abandoned; their leases run out and
      // another runner retries them.
      auto& st = self->state;
      aout(self) << "cafmq: shutdown timeout, abandoning " << st.running.size()
                 << " running attempts" << std::endl;
      for (auto& kvp : st.running)
        self->send(st.pool, cancel_atom::value, kvp.first,
                   cancel_reason::shutdown);
      finish(self);
    },
    [=](retire_atom, const std::string& key) {
      // Only a channel with nothing outstanding may go: then nothing can be
      // on its way to it.
      auto& chans = *self->state.channels;
      auto i = chans.find(key);
      if (i == chans.end() || i->second.outstanding > 0)
        return false;
      chans.erase(i);
      return true;
    },
    [=](stats_atom) {
      auto result = self->state.stats;
      result.running = static_cast<int>(self->state.running.size());
      result.channels = static_cast<int>(self->state.channels->size());
      return result;
    },
  };
}

} // namespace

caf::actor spawn_dispatcher(caf::actor_system& sys, runner_config cfg,
                            caf::actor claim_db, caf::actor write_db,
                            bool with_listener) {
  return sys.spawn(dispatcher, std::move(cfg), std::move(claim_db),
                   std::move(write_db), with_listener);
}

} // namespace cafmq::actors
