// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/actors/detail/keeper.hpp"

#include <unordered_map>
#include <unordered_set>

#include <caf/all.hpp>

#include "cafmq/error.hpp"

namespace cafmq::actors {

namespace {

// The answers of one round, collected from the channels.
struct round {
  std::size_t waiting = 0;
  std::vector<std::pair<channel_actor, std::vector<attempt_ref>>> held;
};

struct keeper_state {
  context_ptr ctx;
  dispatcher_actor dispatcher;
  database_actor db;
  bool renewing = false;
  runner_stats counts;
  static inline const char* name = "cafmq.keeper";
};

using keeper_ptr = keeper_actor::stateful_pointer<keeper_state>;

void done(keeper_ptr self) {
  self->state.renewing = false;
}

// One statement for every held attempt; then each owner hears what it
// lost and which of its tasks had a cancel requested.
void renew(keeper_ptr self, std::shared_ptr<round> r) {
  auto& st = self->state;
  std::vector<attempt_ref> refs;
  for (auto& kvp : r->held)
    refs.insert(refs.end(), kvp.second.begin(), kvp.second.end());
  if (refs.empty()) {
    done(self);
    return;
  }
  self
    ->request(st.db, st.ctx->request_timeout(), renew_atom::value, refs,
              caf::timespan{st.ctx->cfg.lease})
    .then(
      [=](const std::vector<lease_state>& owned) {
        auto& st = self->state;
        std::unordered_map<uuid, bool> kept;
        for (auto& x : owned)
          kept.emplace(x.id, x.cancel_requested);
        std::size_t lost = 0;
        for (auto& [owner, held] : r->held) {
          std::vector<attempt_ref> gone;
          std::unordered_set<uuid> cancels;
          for (auto& ref : held) {
            auto i = kept.find(ref.id);
            if (i == kept.end())
              gone.push_back(ref);
            else if (i->second)
              cancels.insert(ref.id);
          }
          lost += gone.size();
          if (!gone.empty())
            self->send(owner, lost_atom::value, std::move(gone));
          for (auto& id : cancels) {
            ++st.counts.cancels_at_renewal;
            self->send(owner, cancel_atom::value, id, cancel_reason::cancelled);
          }
        }
        st.counts.lost += static_cast<std::int64_t>(lost);
        if (lost > 0)
          st.ctx->log(log_level::warning, "attempts lost their lease",
                      {{"attempts", lost}});
        done(self);
      },
      [=](caf::error& err) {
        self->state.ctx->log(
          log_level::warning, "renewing leases failed",
          {{"attempts", refs.size()}, {"error", render(err)}});
        done(self);
      });
}

void tick(keeper_ptr self) {
  auto& st = self->state;
  if (st.renewing)
    return;
  st.renewing = true;
  auto timeout = st.ctx->request_timeout();
  self->request(st.dispatcher, timeout, channels_atom::value)
    .then(
      [=](const std::vector<channel_actor>& channels) {
        auto r = std::make_shared<round>();
        r->waiting = channels.size();
        if (channels.empty()) {
          done(self);
          return;
        }
        for (auto& channel : channels) {
          self->request(channel, timeout, renew_atom::value)
            .then(
              [=](std::vector<attempt_ref>& held) {
                if (!held.empty())
                  r->held.emplace_back(channel, std::move(held));
                if (--r->waiting == 0)
                  renew(self, r);
              },
              [=](caf::error&) {
                // A channel that retired meanwhile holds nothing.
                if (--r->waiting == 0)
                  renew(self, r);
              });
        }
      },
      [=](caf::error& err) {
        self->state.ctx->log(log_level::warning,
                             "cannot reach the dispatcher to renew leases",
                             {{"error", render(err)}});
        done(self);
      });
}

keeper_actor::behavior_type keeper(keeper_ptr self, context_ptr ctx,
                                   dispatcher_actor dispatcher,
                                   database_actor db) {
  auto& st = self->state;
  st.ctx = std::move(ctx);
  st.dispatcher = std::move(dispatcher);
  st.db = std::move(db);
  self->delayed_send(self, st.ctx->cfg.keep_alive_interval, tick_atom::value);
  return {
    [=](tick_atom) {
      tick(self);
      self->delayed_send(self, self->state.ctx->cfg.keep_alive_interval,
                         tick_atom::value);
    },
    [=](peers_atom, database_actor& x) { self->state.db = std::move(x); },
    [=](peers_atom, dispatcher_actor& x) {
      self->state.dispatcher = std::move(x);
    },
    [=](stats_atom) { return self->state.counts; },
  };
}

} // namespace

keeper_actor spawn_keeper(caf::actor_system& sys, context_ptr ctx,
                          dispatcher_actor dispatcher, database_actor db) {
  return sys.spawn(keeper, std::move(ctx), std::move(dispatcher),
                   std::move(db));
}

} // namespace cafmq::actors
