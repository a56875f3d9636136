// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/actors/detail/event_hub.hpp"

#include <map>

#include <caf/all.hpp>

namespace cafmq::actors {

namespace {

struct event_hub_state {
  context_ptr ctx;
  using subscription = std::pair<event_filter, event_actor>;
  std::vector<subscription> subscribers;
  /// Told where events go: the face, and the dispatcher (which tells the
  /// channels).
  events_listener_actor face;
  events_listener_actor dispatcher;
  /// Events of tasks whose spawn is being written, in arrival order.
  std::map<uuid, std::vector<task_event>> held;
  static inline const char* name = "cafmq.events";
};

using event_hub_ptr = event_hub_actor::stateful_pointer<event_hub_state>;

// Where events go now: here while someone subscribes, nowhere otherwise.
event_sink_actor sink(event_hub_ptr self) {
  if (self->state.subscribers.empty())
    return {};
  return caf::actor_cast<event_sink_actor>(self);
}

void tell(event_hub_ptr self, const events_listener_actor& x) {
  if (x)
    self->send(x, events_atom::value, sink(self));
}

void fan_out(event_hub_ptr self, const std::vector<task_event>& events) {
  for (auto& [filter, subscriber] : self->state.subscribers) {
    std::vector<task_event> passed;
    for (auto& x : events)
      if (filter.matches(x))
        passed.push_back(x);
    if (!passed.empty())
      self->send(subscriber, event_atom::value, std::move(passed));
  }
}

event_hub_actor::behavior_type event_hub(event_hub_ptr self, context_ptr ctx,
                                         events_listener_actor face) {
  auto& st = self->state;
  st.ctx = std::move(ctx);
  st.face = std::move(face);
  // A restarted hub starts with nobody: what an old one told is void. The
  // face subscribes again what it was asked to.
  tell(self, st.face);
  self->set_down_handler([=](caf::down_msg& msg) {
    auto& st = self->state;
    auto& xs = st.subscribers;
    auto before = xs.size();
    xs.erase(
      std::remove_if(xs.begin(), xs.end(),
                     [&](auto& x) { return x.second.address() == msg.source; }),
      xs.end());
    if (xs.size() == before)
      return;
    st.ctx->log(log_level::debug, "event subscriber left",
                {{"subscribers", xs.size()}});
    if (xs.empty()) {
      tell(self, st.face);
      tell(self, st.dispatcher);
    }
  });
  return {
    [=](subscribe_atom, event_filter& filter, event_actor& subscriber) {
      auto& st = self->state;
      if (!subscriber)
        return false;
      self->monitor(subscriber);
      st.subscribers.emplace_back(std::move(filter), std::move(subscriber));
      st.ctx->log(log_level::debug, "event subscriber joined",
                  {{"subscribers", st.subscribers.size()}});
      if (st.subscribers.size() == 1) {
        tell(self, st.face);
        tell(self, st.dispatcher);
      }
      return true;
    },
    [=](peers_atom, events_listener_actor& x) {
      self->state.dispatcher = std::move(x);
      tell(self, self->state.dispatcher);
    },
    [=](event_atom, const std::vector<task_event>& events) {
      auto& held = self->state.held;
      std::vector<task_event> out;
      for (auto& x : events) {
        auto i = held.find(x.id);
        if (i == held.end()) {
          out.push_back(x);
        } else if (x.kind == task_event::spawned) {
          out.push_back(x);
          out.insert(out.end(), i->second.begin(), i->second.end());
          held.erase(i);
        } else {
          i->second.push_back(x);
        }
      }
      fan_out(self, out);
    },
    [=](hold_atom, const uuid& id) {
      self->state.held.emplace(id, std::vector<task_event>{});
      // A spawn whose writer vanished must not hold the task's events.
      self->delayed_send(self, self->state.ctx->request_timeout(),
                         abandon_atom::value, id);
    },
    [=](abandon_atom, const uuid& id) {
      auto& held = self->state.held;
      auto i = held.find(id);
      if (i == held.end())
        return;
      auto events = std::move(i->second);
      held.erase(i);
      fan_out(self, events);
    },
  };
}

} // namespace

event_hub_actor spawn_event_hub(caf::actor_system& sys, context_ptr ctx,
                                events_listener_actor face) {
  return sys.spawn(event_hub, std::move(ctx), std::move(face));
}

task_event make_event(task_event::kind_t kind, const claimed_task& task,
                      const runtime_context& ctx) {
  task_event result;
  result.kind = kind;
  result.id = task.id;
  result.attempt = task.attempt;
  result.name = task.name;
  result.channel_name = task.channel_name;
  result.channel_args = task.channel_args;
  result.at = caf::make_timestamp();
  result.node = ctx.cfg.node;
  if (task.workflow_id)
    result.workflow = *task.workflow_id;
  return result;
}

void emit(const event_sink_actor& sink, std::vector<task_event> events) {
  if (sink && !events.empty())
    caf::anon_send(sink, event_atom::value, std::move(events));
}

} // namespace cafmq::actors
