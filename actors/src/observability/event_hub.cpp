// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/actors/detail/event_hub.hpp"

#include <map>

#include <caf/all.hpp>

namespace cafmq::actors {

event_hub_actor event_bus::hub() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return hub_;
}

void event_bus::hub(event_hub_actor x) {
  std::lock_guard<std::mutex> guard{mtx_};
  hub_ = std::move(x);
}

std::vector<event_bus::subscription> event_bus::subscriptions() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return subscriptions_;
}

void event_bus::subscriptions(std::vector<subscription> xs) {
  std::lock_guard<std::mutex> guard{mtx_};
  count_.store(static_cast<int>(xs.size()), std::memory_order_relaxed);
  subscriptions_ = std::move(xs);
}

namespace {

struct event_hub_state {
  context_ptr ctx;
  std::vector<event_bus::subscription> subscribers;
  /// Events of tasks whose spawn is being written, in arrival order.
  std::map<uuid, std::vector<task_event>> held;
  static inline const char* name = "cafmq.events";
};

using event_hub_ptr = event_hub_actor::stateful_pointer<event_hub_state>;

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

event_hub_actor::behavior_type event_hub(event_hub_ptr self, context_ptr ctx) {
  auto& st = self->state;
  st.ctx = std::move(ctx);
  st.subscribers = st.ctx->events->subscriptions();
  for (auto& x : st.subscribers)
    self->monitor(x.second);
  st.ctx->events->hub(caf::actor_cast<event_hub_actor>(self));
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
    st.ctx->events->subscriptions(xs);
    st.ctx->log(log_level::debug, "event subscriber left",
                {{"subscribers", xs.size()}});
  });
  return {
    [=](subscribe_atom, event_filter& filter, event_actor& subscriber) {
      auto& st = self->state;
      if (!subscriber)
        return false;
      self->monitor(subscriber);
      st.subscribers.emplace_back(std::move(filter), std::move(subscriber));
      st.ctx->events->subscriptions(st.subscribers);
      st.ctx->log(log_level::debug, "event subscriber joined",
                  {{"subscribers", st.subscribers.size()}});
      return true;
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

event_hub_actor spawn_event_hub(caf::actor_system& sys, context_ptr ctx) {
  return sys.spawn(event_hub, std::move(ctx));
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
  return result;
}

void emit(const runtime_context& ctx, std::vector<task_event> events) {
  if (events.empty() || !ctx.events->active())
    return;
  if (auto hub = ctx.events->hub())
    caf::anon_send(hub, event_atom::value, std::move(events));
}

} // namespace cafmq::actors
