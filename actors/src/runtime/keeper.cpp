// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/actors/detail/keeper.hpp"

#include <unordered_map>
#include <unordered_set>

#include <caf/all.hpp>

#include "cafmq/error.hpp"

namespace cafmq::actors {

namespace {

// The attempts one channel owns.
struct owned {
  channel_actor owner;
  std::unordered_set<attempt_ref> refs;
};

struct keeper_state {
  context_ptr ctx;
  database_actor db;
  std::unordered_map<caf::actor_addr, owned> held;
  bool renewing = false;
  // A renewal was asked for while one was in flight: it follows at once.
  bool again = false;
  static inline const char* name = "cafmq.keeper";
};

using keeper_ptr = keeper_actor::stateful_pointer<keeper_state>;

// The channel that sent the current message.
channel_actor sender(keeper_ptr self) {
  return caf::actor_cast<channel_actor>(self->current_sender());
}

// Tells each owner which of its attempts were not renewed (their lease was
// lost: another runner may run them) and which had a cancel requested (for
// notifications that were missed). A lost attempt is no longer renewed. One
// whose outcome was written while the renewal ran is neither: its owner
// tells us soon that it ended.
void settle(keeper_ptr self, const std::vector<attempt_ref>& refs,
            const std::vector<lease_state>& kept_states) {
  auto& st = self->state;
  std::unordered_map<uuid, bool> kept;
  for (auto& x : kept_states)
    kept.emplace(x.id, x.cancel_requested && !x.ended);
  std::unordered_set<attempt_ref> renewed{refs.begin(), refs.end()};
  std::size_t lost = 0;
  for (auto& [addr, x] : st.held) {
    std::vector<attempt_ref> gone;
    std::vector<uuid> cancels;
    for (auto& ref : x.refs) {
      // Held since the renewal was sent: renewed next time.
      if (renewed.count(ref) == 0)
        continue;
      auto i = kept.find(ref.id);
      if (i == kept.end())
        gone.push_back(ref);
      else if (i->second)
        cancels.push_back(ref.id);
    }
    for (auto& ref : gone)
      x.refs.erase(ref);
    lost += gone.size();
    if (!gone.empty())
      self->send(x.owner, lost_atom::value, std::move(gone));
    st.ctx->metrics->cancels_at_renewal(
      static_cast<std::int64_t>(cancels.size()));
    for (auto& id : cancels)
      self->send(x.owner, cancel_atom::value, id, cancel_reason::cancelled);
  }
  st.ctx->metrics->leases_lost(static_cast<std::int64_t>(lost));
  if (lost > 0)
    st.ctx->log(log_level::warning, "attempts lost their lease",
                {{"attempts", lost}});
}

void renew_again(keeper_ptr self);

// One statement for every held attempt; one renewal in flight at a time.
void tick(keeper_ptr self) {
  auto& st = self->state;
  if (st.renewing)
    return;
  std::vector<attempt_ref> refs;
  for (auto& kvp : st.held)
    refs.insert(refs.end(), kvp.second.refs.begin(), kvp.second.refs.end());
  if (refs.empty())
    return;
  st.renewing = true;
  self
    ->request(st.db, st.ctx->request_timeout(), renew_atom::value, refs,
              caf::timespan{st.ctx->cfg.lease})
    .then(
      [=](const std::vector<lease_state>& kept) {
        self->state.renewing = false;
        settle(self, refs, kept);
        renew_again(self);
      },
      [=](caf::error& err) {
        self->state.renewing = false;
        self->state.ctx->log(
          log_level::warning, "renewing leases failed",
          {{"attempts", refs.size()}, {"error", render(err)}});
        renew_again(self);
      });
}

void renew_again(keeper_ptr self) {
  if (!self->state.again)
    return;
  self->state.again = false;
  tick(self);
}

keeper_actor::behavior_type keeper(keeper_ptr self, context_ptr ctx,
                                   database_actor db) {
  auto& st = self->state;
  st.ctx = std::move(ctx);
  st.db = std::move(db);
  // An owner that ends holds nothing (a crashed channel's attempts are
  // stopped by the pool; their leases lapse).
  self->set_down_handler(
    [=](caf::down_msg& msg) { self->state.held.erase(msg.source); });
  self->delayed_send(self, st.ctx->cfg.keep_alive_interval, tick_atom::value);
  return {
    [=](hold_atom, const std::vector<attempt_ref>& refs) {
      auto owner = sender(self);
      if (!owner)
        return;
      auto [i, added] = self->state.held.try_emplace(owner.address());
      if (added) {
        i->second.owner = owner;
        self->monitor(owner);
      }
      i->second.refs.insert(refs.begin(), refs.end());
    },
    [=](unhold_atom, const std::vector<attempt_ref>& refs) {
      auto i = self->state.held.find(
        caf::actor_cast<caf::actor_addr>(self->current_sender()));
      if (i == self->state.held.end())
        return;
      for (auto& ref : refs)
        i->second.refs.erase(ref);
    },
    [=](renew_atom) {
      // Out of turn: the regular ticks keep their pace.
      if (self->state.renewing)
        self->state.again = true;
      else
        tick(self);
    },
    [=](tick_atom) {
      tick(self);
      self->delayed_send(self, self->state.ctx->cfg.keep_alive_interval,
                         tick_atom::value);
    },
    [=](peers_atom, database_actor& x) { self->state.db = std::move(x); },
  };
}

} // namespace

keeper_actor spawn_keeper(caf::actor_system& sys, context_ptr ctx,
                          database_actor db) {
  return sys.spawn(keeper, std::move(ctx), std::move(db));
}

} // namespace cafmq::actors
