#include "cafmq/actors/channel.hpp"

#include <deque>
#include <unordered_map>

#include <caf/all.hpp>

#include "cafmq/actors/messages.hpp"

namespace cafmq::actors {

namespace {

struct channel_state {
  std::string key;
  std::deque<claimed_task> queue;
  std::unordered_map<attempt_ref, bool> in_flight; // -> ordered
  bool ordered_in_flight = false;
  int limit = 0;
  int idle_generation = 0;
  // The runner stops: nothing more starts.
  bool stopping = false;
  static inline const char* name = "cafmq.channel";
};

using channel_actor = caf::stateful_actor<channel_state>;

bool may_start(const channel_state& st, const claimed_task& next) {
  if (st.limit > 0 && static_cast<int>(st.in_flight.size()) >= st.limit)
    return false;
  return !(next.ordered && st.ordered_in_flight);
}

// Hands the pool what may start now, in one message.
void pump(channel_actor* self, const caf::actor& pool) {
  auto& st = self->state;
  std::vector<claimed_task> batch;
  while (!st.stopping && !st.queue.empty() && may_start(st, st.queue.front())) {
    auto task = std::move(st.queue.front());
    st.queue.pop_front();
    st.in_flight.emplace(attempt_ref{task.id, task.attempt}, task.ordered);
    st.ordered_in_flight |= task.ordered;
    batch.push_back(std::move(task));
  }
  if (!batch.empty())
    self->send(pool, run_atom::value, std::move(batch));
}

// Gives every queued attempt back: the runner stops before they start.
void give_back(channel_actor* self, const caf::actor& dispatcher) {
  auto& st = self->state;
  if (st.queue.empty())
    return;
  std::vector<task_outcome> outcomes;
  for (auto& task : st.queue) {
    task_outcome outcome;
    outcome.ref = attempt_ref{task.id, task.attempt};
    outcome.kind = task_outcome::released;
    outcomes.push_back(std::move(outcome));
  }
  st.queue.clear();
  self->send(dispatcher, done_atom::value, std::move(outcomes));
}

caf::behavior channel(channel_actor* self, std::string key, int limit,
                      std::chrono::milliseconds idle_timeout, caf::actor pool,
                      caf::actor dispatcher) {
  self->state.key = std::move(key);
  self->state.limit = limit;
  auto arm_idle_timer = [=] {
    self->delayed_send(self, idle_timeout, retire_atom::value,
                       ++self->state.idle_generation);
  };
  return {
    [=](run_atom, std::vector<claimed_task>& tasks) {
      for (auto& task : tasks)
        self->state.queue.push_back(std::move(task));
      pump(self, pool);
      if (self->state.stopping)
        give_back(self, dispatcher);
    },
    [=](stop_atom) {
      self->state.stopping = true;
      give_back(self, dispatcher);
    },
    [=](done_atom, const std::vector<attempt_ref>& refs) {
      auto& st = self->state;
      for (auto& ref : refs) {
        auto i = st.in_flight.find(ref);
        if (i == st.in_flight.end())
          continue;
        if (i->second)
          st.ordered_in_flight = false;
        st.in_flight.erase(i);
      }
      pump(self, pool);
      if (st.in_flight.empty() && st.queue.empty())
        arm_idle_timer();
    },
    [=](retire_atom, int generation) {
      auto& st = self->state;
      if (generation != st.idle_generation || !st.in_flight.empty()
          || !st.queue.empty())
        return;
      self->request(dispatcher, caf::infinite, retire_atom::value, st.key)
        .then([=](bool agreed) {
          if (agreed)
            self->quit();
        });
    },
  };
}

} // namespace

caf::actor spawn_channel(caf::actor_system& sys, std::string key, int limit,
                         std::chrono::milliseconds idle_timeout,
                         caf::actor pool, caf::actor dispatcher) {
  return sys.spawn(channel, std::move(key), limit, idle_timeout,
                   std::move(pool), std::move(dispatcher));
}

} // namespace cafmq::actors
