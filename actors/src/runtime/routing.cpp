// SPDX-License-Identifier: BSD-3-Clause
#include <caf/all.hpp>

#include "cafmq/actors/detail/channel.hpp"
#include "cafmq/error.hpp"
#include "runtime/dispatcher_state.hpp"

// The dispatcher's channel registry and routes (see dispatcher.hpp).

namespace cafmq::actors::dispatcher_impl {

std::string key_of(const std::string& name, const std::string& args) {
  return name + '\x1f' + args;
}

channel_entry& channel_of(dispatcher_ptr self, const std::string& key) {
  auto& st = self->state;
  auto& entry = (*st.channels)[key];
  if (!entry.handle) {
    auto paused = st.paused.count(channel_name_of(key)) > 0;
    entry.handle = spawn_channel(
      self->system(), st.ctx, key, caf::actor_cast<dispatcher_actor>(self),
      st.pool, st.router, st.completer, st.keeper, paused);
    self->monitor(entry.handle);
    if (st.events)
      self->send(entry.handle, events_atom::value, st.events);
    if (st.draining)
      self->send(entry.handle, stop_atom::value);
  }
  return entry;
}

void route_cancel(dispatcher_ptr self, const std::string& name,
                  const std::string& args, const uuid& id) {
  auto& chans = *self->state.channels;
  auto i = chans.find(key_of(name, args));
  if (i != chans.end())
    self->send(i->second.handle, cancel_atom::value, id,
               cancel_reason::cancelled);
}

// Cancels that overtook a claim reach the owners after its attempts.
void route_deferred_cancels(dispatcher_ptr self) {
  auto cancels = std::move(self->state.deferred_cancels);
  self->state.deferred_cancels.clear();
  for (auto& [name, args, id] : cancels)
    route_cancel(self, name, args, id);
}

// A channel actor ended: if it crashed, what it held is gone (its leases
// lapse and the tasks run again); the next claim of its channel spawns a
// new owner.
void channel_down(dispatcher_ptr self, const caf::down_msg& msg) {
  auto& st = self->state;
  for (auto i = st.channels->begin(); i != st.channels->end(); ++i) {
    if (i->second.handle.address() != msg.source)
      continue;
    st.held -= i->second.held;
    auto key = i->first;
    st.channels->erase(i);
    if (msg.reason && msg.reason != caf::exit_reason::user_shutdown) {
      st.ctx->log(
        log_level::error, "channel actor crashed, restarting",
        {{"channel", channel_name_of(key)}, {"reason", render(msg.reason)}});
      self->send(st.runtime, restart_atom::value, "channel");
      // What it held can be claimed again once the leases lapse.
      maybe_claim(self);
    }
    check_drained(self);
    return;
  }
}

} // namespace cafmq::actors::dispatcher_impl
