// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/actors/detail/watch_service.hpp"

#include <algorithm>
#include <map>
#include <vector>

#include <caf/all.hpp>
#include <pqxx/pqxx>

#include "cafmq/detail/watch_set.hpp"
#include "cafmq/error.hpp"
#include "runtime/listening_connection.hpp"
#include "runtime/thread_name.hpp"

namespace cafmq::actors {

namespace {

using namespace std::chrono_literals;

/// Longest block in a wait for notifications: bounds how late a new watch
/// or a stop is seen.
constexpr auto watch_poll_period = 50ms;
/// Without watches, the connection is closed after this long.
constexpr auto watch_linger = 10s;

struct watch_service_state {
  context_ptr ctx;
  guard_ptr guard;
  listening_connection link; // before `set`: outlives it
  cafmq::detail::watch_set set;
  // The watchers of each watched task.
  std::map<uuid, std::vector<watcher_actor>> watchers;
  // The tasks each watcher watches (once per watch): monitored while it
  // watches any.
  std::map<caf::actor_addr, std::vector<uuid>> watched_by;
  std::size_t count = 0;
  // A poll_atom is on its way.
  bool looping = false;
  std::chrono::steady_clock::time_point idle_since;
  std::chrono::milliseconds backoff{0};
  // What the watches still open when this actor ends are told.
  caf::error ending = make_error(errc::runtime_stopped,
                                 "the runtime's watch service restarted: "
                                 "watch again");
  static inline const char* name = "cafmq.watches";

  ~watch_service_state() {
    for (auto& [id, xs] : watchers)
      for (auto& x : xs)
        caf::anon_send(x, watch_atom::value, ending);
  }

  void drop() {
    set.detach();
    link.close();
  }
};

using watch_service_ptr
  = watch_service_actor::stateful_pointer<watch_service_state>;

bool connect_watches(watch_service_ptr self) {
  auto& st = self->state;
  return connect_or_back_off(
    *st.ctx, "watch service", st.backoff,
    [&] {
      st.drop();
      st.link.open(*st.ctx, "watch");
      st.set.attach(*st.link.conn);
    },
    [&] { st.drop(); });
}

// Sends a task's state to its watchers; its last report ends their watches.
void report(watch_service_ptr self, const uuid& id,
            caf::expected<task_status> x) {
  auto& st = self->state;
  auto i = st.watchers.find(id);
  if (i == st.watchers.end())
    return;
  auto last = !x || is_final(x->state);
  for (auto& w : i->second)
    if (x)
      self->send(w, status_atom::value, *x);
    else
      self->send(w, watch_atom::value, x.error());
  if (!last)
    return;
  st.count -= i->second.size();
  for (auto& w : i->second) {
    auto j = st.watched_by.find(w.address());
    if (j == st.watched_by.end())
      continue;
    auto& ids = j->second;
    if (auto k = std::find(ids.begin(), ids.end(), id); k != ids.end())
      ids.erase(k);
    if (ids.empty()) {
      self->demonitor(w.address());
      st.watched_by.erase(j);
    }
  }
  st.watchers.erase(i);
}

void poll_watches(watch_service_ptr self) {
  auto& st = self->state;
  st.looping = false;
  if (st.watchers.empty()) {
    st.idle_since = std::chrono::steady_clock::now();
    self->delayed_send(self, watch_linger, tick_atom::value);
    return;
  }
  if (!st.link.conn && !connect_watches(self)) {
    st.looping = true;
    self->delayed_send(self, st.backoff, poll_atom::value);
    return;
  }
  try {
    st.guard->enter(st.link.breaker);
    st.set.poll(watch_poll_period,
                [=](const uuid& id, caf::expected<task_status> x) {
                  report(self, id, std::move(x));
                });
    st.guard->leave();
  } catch (const std::exception& e) {
    st.guard->leave();
    st.ctx->log(log_level::warning,
                "watch service connection lost, reconnecting",
                {{"watches", st.count}, {"error", render(from_exception(e))}});
    st.drop();
  }
  st.looping = true;
  self->send(self, poll_atom::value);
}

// Forgets the watches of a watcher that ended.
void watcher_gone(watch_service_ptr self, const caf::actor_addr& who) {
  auto& st = self->state;
  auto j = st.watched_by.find(who);
  if (j == st.watched_by.end())
    return;
  auto ids = std::move(j->second);
  st.watched_by.erase(j);
  for (auto& id : ids) {
    auto i = st.watchers.find(id);
    if (i == st.watchers.end())
      continue;
    auto& xs = i->second;
    auto before = xs.size();
    xs.erase(std::remove_if(xs.begin(), xs.end(),
                            [&](auto& x) { return x.address() == who; }),
             xs.end());
    st.count -= before - xs.size();
    if (xs.empty()) {
      st.set.remove(id);
      st.watchers.erase(i);
    }
  }
}

watch_service_actor::behavior_type
watch_service(watch_service_ptr self, context_ptr ctx, guard_ptr guard) {
  name_this_thread("cafmq.watches");
  auto& st = self->state;
  st.ctx = std::move(ctx);
  st.guard = std::move(guard);
  self->set_down_handler(
    [=](caf::down_msg& msg) { watcher_gone(self, msg.source); });
  self->set_exit_handler([=](caf::exit_msg& msg) {
    self->state.ending = make_error(
      errc::runtime_stopped, "the runtime stopped before the task ended");
    self->quit(msg.reason);
  });
  return {
    [=](watch_atom, const uuid& id, watcher_actor& watcher) {
      auto& st = self->state;
      if (!watcher)
        return;
      auto limit = st.ctx->cfg.max_watches;
      if (st.count >= static_cast<std::size_t>(limit)) {
        self->send(
          watcher, watch_atom::value,
          make_error(errc::limit_reached,
                     "this runtime already serves " + std::to_string(st.count)
                       + " watches (max-watches: " + std::to_string(limit)
                       + ")"));
        return;
      }
      auto& ids = st.watched_by[watcher.address()];
      if (ids.empty())
        self->monitor(watcher);
      ids.push_back(id);
      auto& xs = st.watchers[id];
      auto known = !xs.empty();
      xs.push_back(watcher);
      ++st.count;
      // A new task's state is read first; another watcher of a task gets
      // what the others got last.
      if (!known)
        st.set.add(id);
      else if (auto last = st.set.last(id))
        self->send(watcher, status_atom::value, *last);
      if (!st.looping) {
        st.looping = true;
        self->send(self, poll_atom::value);
      }
    },
    [=](poll_atom) { poll_watches(self); },
    [=](tick_atom) {
      auto& st = self->state;
      if (!st.looping && st.watchers.empty()
          && std::chrono::steady_clock::now() - st.idle_since
               >= watch_linger - 10ms)
        st.drop();
    },
  };
}

} // namespace

watch_service_actor spawn_watch_service(caf::actor_system& sys, context_ptr ctx,
                                        guard_ptr guard) {
  return sys.spawn<caf::detached>(watch_service, std::move(ctx),
                                  std::move(guard));
}

} // namespace cafmq::actors
