// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/actors/detail/router.hpp"

#include <algorithm>
#include <chrono>
#include <set>

#include <caf/all.hpp>

#include "cafmq/actors/detail/worker_port.hpp"
#include "cafmq/error.hpp"
#include "nodes/router_state.hpp"
#include "runtime/attempt.hpp"
#include "runtime/started_attempts.hpp"

namespace cafmq::actors {

namespace router_impl {

bool offers(const worker_entry& w, const std::string& name) {
  auto& names = w.offer.names;
  return std::find(names.begin(), names.end(), name) != names.end();
}

// True if no handler here runs `name` but a joined worker offers it.
bool runs_remotely(const router_state& st, const std::string& name) {
  if (st.ctx->runs_here(name))
    return false;
  return std::any_of(st.workers->begin(), st.workers->end(),
                     [&](auto& w) { return offers(w, name); });
}

// A worker holds up to this many times its capacity: what it holds beyond
// it waits there, so that a handler that ends takes the next attempt at
// once instead of after a round trip to this runner (claim-ahead on the
// worker). The attempts held ahead are renewed (their channel actors hold
// them) and cancelled (the worker takes a queued one back) like running
// ones.
constexpr int worker_ahead = 2;

// The least loaded worker with room that offers `name`, or nullptr.
worker_entry* free_worker(router_ptr self, const std::string& name) {
  worker_entry* result = nullptr;
  for (auto& w : *self->state.workers)
    if (w.load < worker_ahead * w.offer.capacity && offers(w, name)
        && (result == nullptr || w.load < result->load))
      result = &w;
  return result;
}

void give_back(router_ptr self, const channel_actor& owner,
               const claimed_task& task) {
  self->state.owners.add(owner,
                         unstarted_outcome({task.id, task.attempt},
                                           cancel_reason::shutdown, nullptr));
}

// An attempt starts on its worker: from now on a takeover counts it as
// started, and its timeout runs.
void start(router_ptr self, const attempt_ref& ref, placed_attempt& x,
           const worker_entry& w) {
  x.ahead = false;
  x.started = std::chrono::steady_clock::now();
  self->state.started->add(ref.id, ref.attempt, w.offer.node);
  arm_timeout(ref, x.timeout, x.owner);
}

// Sends an attempt to `w`: it starts there if a handler is free, else it
// is held ahead until one that runs ends.
void send_to(router_ptr self, worker_entry& w, claimed_task task,
             channel_actor owner) {
  auto& st = self->state;
  attempt_ref ref{task.id, task.attempt};
  auto& x = st.placed[ref];
  x = placed_attempt{};
  x.owner = owner;
  x.port = w.port;
  x.metrics = &st.ctx->metrics->of(task.name);
  x.timeout = task.timeout;
  if (w.load - static_cast<int>(w.ahead.size()) < w.offer.capacity) {
    start(self, ref, x, w);
  } else {
    x.ahead = true;
    w.ahead.push_back(ref);
  }
  ++w.load;
  w.batch.push_back(std::move(task));
}

worker_entry* worker_of(router_ptr self, const worker_port_actor& port) {
  for (auto& w : *self->state.workers)
    if (w.port == port)
      return &w;
  return nullptr;
}

// Places an attempt on the least loaded worker that offers its name, or
// queues it until one has room; gives it back if none offers it.
void place(router_ptr self, claimed_task task, channel_actor owner) {
  auto& st = self->state;
  if (st.stopping || !runs_remotely(st, task.name)) {
    give_back(self, owner, task);
    return;
  }
  auto& waiting = st.waiting[task.name];
  auto w = waiting.empty() ? free_worker(self, task.name) : nullptr;
  if (w == nullptr) {
    waiting.emplace_back(std::move(task), std::move(owner));
    return;
  }
  send_to(self, *w, std::move(task), std::move(owner));
}

// Places queued attempts on workers with room.
void pump(router_ptr self) {
  auto& st = self->state;
  for (auto i = st.waiting.begin(); i != st.waiting.end();) {
    auto& waiting = i->second;
    while (!waiting.empty()) {
      auto w = free_worker(self, i->first);
      if (w == nullptr)
        break;
      auto next = std::move(waiting.front());
      waiting.pop_front();
      send_to(self, *w, std::move(next.first), std::move(next.second));
    }
    if (waiting.empty())
      i = st.waiting.erase(i);
    else
      ++i;
  }
}

// Sends what the current message produced: one batch per worker, one
// message per owner.
void flush(router_ptr self) {
  auto& st = self->state;
  for (auto& w : *st.workers) {
    if (!w.batch.empty()) {
      self->send(w.port, run_atom::value, std::move(w.batch));
      w.batch.clear();
    }
  }
  st.owners.send(self);
}

// Reports an ended attempt once; later reports of it are ignored. On a
// worker that goes on (not `lost`), the ending of an attempt that ran
// starts the first one held ahead there, as the worker's queue did. One
// held ahead on a lost worker never started: it goes back to the queue.
void report(router_ptr self, task_outcome outcome, bool lost = false) {
  auto& st = self->state;
  auto i = st.placed.find(outcome.ref);
  if (i == st.placed.end())
    return;
  auto ref = outcome.ref;
  auto x = std::move(i->second);
  st.placed.erase(i);
  st.started->remove(ref.id);
  auto w = worker_of(self, x.port);
  if (x.ahead) {
    if (w != nullptr)
      w->ahead.erase(std::find(w->ahead.begin(), w->ahead.end(), ref));
    if (lost)
      outcome = unstarted_outcome(ref, cancel_reason::shutdown, nullptr);
  } else {
    if (x.metrics != nullptr)
      st.ctx->metrics->ran(*x.metrics,
                           std::chrono::steady_clock::now() - x.started);
    if (w != nullptr && !lost && !w->ahead.empty()) {
      auto next = w->ahead.front();
      w->ahead.pop_front();
      start(self, next, st.placed.at(next), *w);
    }
  }
  st.owners.add(x.owner, std::move(outcome));
  if (w != nullptr)
    --w->load;
  pump(self);
}

// Gives back the waiting attempts of names no worker offers any more.
void give_back_unoffered(router_ptr self) {
  auto& st = self->state;
  for (auto i = st.waiting.begin(); i != st.waiting.end();) {
    if (runs_remotely(st, i->first)) {
      ++i;
      continue;
    }
    for (auto& [task, owner] : i->second)
      give_back(self, owner, task);
    i = st.waiting.erase(i);
  }
}

// Tells the dispatcher what the workers offer now.
void report_offer(router_ptr self) {
  auto& st = self->state;
  if (!st.offers_to)
    return;
  // Names this runner runs itself never go to a worker (the channels send
  // them to the pool): a worker adds capacity only for the others.
  std::set<std::string> names;
  std::int32_t capacity = 0;
  for (auto& w : *st.workers) {
    bool serves = false;
    for (auto& name : w.offer.names)
      if (!st.ctx->runs_here(name)) {
        names.insert(name);
        serves = true;
      }
    if (serves)
      capacity += w.offer.capacity;
  }
  self->send(st.offers_to, offer_atom::value,
             std::vector<std::string>{names.begin(), names.end()}, capacity);
}

std::string invalid_offer(const worker_offer& offer) {
  if (offer.capacity <= 0)
    return "capacity must be positive, got " + std::to_string(offer.capacity);
  if (offer.names.empty())
    return "it offers no task names";
  for (auto& name : offer.names)
    if (name.empty())
      return "it offers an empty task name";
  return {};
}

// A worker joins: spawns and monitors its port.
caf::result<worker_link_actor> join_worker(router_ptr self, worker_offer offer,
                                           worker_actor worker) {
  auto& st = self->state;
  if (st.stopping)
    return make_error(errc::invalid_argument,
                      "the runtime is stopping: no worker may join");
  if (!worker)
    return make_error(errc::invalid_argument,
                      "worker " + offer.node + " sent no worker actor");
  if (auto why = invalid_offer(offer); !why.empty())
    return make_error(errc::invalid_argument,
                      "worker " + offer.node + " cannot join: " + why);
  auto port
    = spawn_worker_port(self->system(), st.ctx, offer, std::move(worker),
                        caf::actor_cast<router_actor>(self), st.db);
  self->monitor(port);
  std::string names;
  for (auto& name : offer.names)
    names += (names.empty() ? "" : ",") + name;
  st.ctx->log(
    log_level::info, "worker joined",
    {{"worker", offer.node}, {"names", names}, {"capacity", offer.capacity}});
  st.workers->push_back(worker_entry{port, std::move(offer), 0, {}, {}});
  report_offer(self);
  pump(self);
  flush(self);
  // The worker sees the part of the port it reports to.
  return worker_link_actor{port};
}

// A port ended: forgets its worker; false if `msg` was not about a port.
bool worker_down(router_ptr self, const caf::down_msg& msg) {
  auto& st = self->state;
  auto& ws = *st.workers;
  auto i = std::find_if(ws.begin(), ws.end(), [&](auto& w) {
    return w.port.address() == msg.source;
  });
  if (i == ws.end())
    return false;
  auto port = i->port;
  auto node = i->offer.node;
  ws.erase(i);
  // The port reported what its worker held before it ended; attempts left
  // on it were placed after it lost the worker and never reached one:
  // they go back to the queue.
  std::vector<attempt_ref> left;
  for (auto& kvp : st.placed)
    if (kvp.second.port == port)
      left.push_back(kvp.first);
  for (auto& ref : left)
    report(self, unstarted_outcome(ref, cancel_reason::shutdown, nullptr));
  st.ctx->log(log_level::info, "worker left", {{"worker", node}});
  report_offer(self);
  give_back_unoffered(self);
  flush(self);
  return true;
}

// An owner (a channel actor) ended: nobody is left to write what its
// attempts return. Their workers are told (reason lost), and what they
// return goes to the dead owner, that is nowhere; the waiting ones never
// start. Their leases lapse, and another claim runs them again.
void owner_down(router_ptr self, const caf::down_msg& msg) {
  auto& st = self->state;
  if (!st.owners.forget(msg.source))
    return;
  int running = 0;
  for (auto& [ref, x] : st.placed) {
    if (x.owner.address() != msg.source)
      continue;
    ++running;
    self->send(x.port, cancel_atom::value, ref, cancel_reason::lost);
  }
  for (auto& kvp : st.waiting) {
    auto& xs = kvp.second;
    xs.erase(
      std::remove_if(xs.begin(), xs.end(),
                     [&](auto& w) { return w.second.address() == msg.source; }),
      xs.end());
  }
  if (running > 0)
    st.ctx->log(log_level::warning,
                "a channel actor ended while its attempts ran on workers: "
                "they are cancelled, and what they return is not written",
                {{"running", running}});
}

// A cancel: a placed attempt's worker is told; a waiting one ends now.
void cancel(router_ptr self, const attempt_ref& ref, cancel_reason why) {
  auto& st = self->state;
  if (auto i = st.placed.find(ref); i != st.placed.end()) {
    self->send(i->second.port, cancel_atom::value, ref, why);
    return;
  }
  for (auto& kvp : st.waiting) {
    auto& xs = kvp.second;
    for (auto w = xs.begin(); w != xs.end(); ++w) {
      if (w->first.id == ref.id && w->first.attempt == ref.attempt) {
        auto owner = std::move(w->second);
        auto filter = st.ctx->filter_of(w->first.name);
        xs.erase(w);
        st.owners.add(owner, unstarted_outcome(ref, why, filter));
        flush(self);
        return;
      }
    }
  }
}

// What the router holds when the runtime stops, if anything: a stop that
// leaves attempts running says where they were (waiting for a worker,
// placed on each worker, or placed on a port no worker entry has).
void log_holdings(router_ptr self) {
  auto& st = self->state;
  std::size_t waiting = 0;
  for (auto& kvp : st.waiting)
    waiting += kvp.second.size();
  if (st.placed.empty() && waiting == 0)
    return;
  std::string workers;
  std::size_t on_workers = 0;
  for (auto& w : *st.workers) {
    auto placed = static_cast<std::size_t>(
      std::count_if(st.placed.begin(), st.placed.end(),
                    [&](auto& kvp) { return kvp.second.port == w.port; }));
    on_workers += placed;
    workers += (workers.empty() ? "" : ", ") + w.offer.node + " load "
               + std::to_string(w.load) + "/" + std::to_string(w.offer.capacity)
               + " placed " + std::to_string(placed);
  }
  st.ctx->log(log_level::info, "the workers' router stops holding attempts",
              {{"waiting", waiting},
               {"placed", st.placed.size()},
               {"on_no_worker", st.placed.size() - on_workers},
               {"workers", workers}});
}

// The stop: gives back what waits, has the workers give back what they
// hold ahead, stops the ports (each ends once its attempts did).
void stop(router_ptr self) {
  auto& st = self->state;
  log_holdings(self);
  st.stopping = true;
  for (auto& kvp : st.waiting)
    for (auto& [task, owner] : kvp.second)
      give_back(self, owner, task);
  st.waiting.clear();
  for (auto& [ref, x] : st.placed)
    if (x.ahead)
      self->send(x.port, cancel_atom::value, ref, cancel_reason::shutdown);
  for (auto& w : *st.workers)
    self->send(w.port, stop_atom::value);
  flush(self);
}

router_actor::behavior_type router(router_ptr self, context_ptr ctx,
                                   database_actor db,
                                   std::shared_ptr<started_attempts> started) {
  auto& st = self->state;
  st.ctx = std::move(ctx);
  st.db = std::move(db);
  st.started = std::move(started);
  self->attach_functor([workers = st.workers](const caf::error&) {
    // However we end, the ports tell their workers.
    for (auto& w : *workers)
      caf::anon_send_exit(w.port, caf::exit_reason::user_shutdown);
  });
  self->set_down_handler([=](caf::down_msg& msg) {
    if (!worker_down(self, msg))
      owner_down(self, msg);
  });
  return {
    [=](run_atom, std::vector<claimed_task>& tasks) {
      auto owner = self->state.owners.sender(self);
      for (auto& task : tasks)
        place(self, std::move(task), owner);
      flush(self);
    },
    [=](cancel_atom, const attempt_ref& ref, cancel_reason why) {
      cancel(self, ref, why);
    },
    [=](stop_atom) { stop(self); },
    [=](peers_atom, database_actor& x) {
      for (auto& w : *self->state.workers)
        self->send(w.port, peers_atom::value, x);
      self->state.db = std::move(x);
    },
    [=](peers_atom, offer_listener_actor& x) {
      self->state.offers_to = std::move(x);
      if (!self->state.workers->empty())
        report_offer(self);
    },
    [=](join_atom, worker_offer& offer, worker_actor& worker) {
      return join_worker(self, std::move(offer), std::move(worker));
    },
    [=](done_atom, std::vector<task_outcome>& outcomes) {
      for (auto& outcome : outcomes)
        report(self, std::move(outcome));
      flush(self);
    },
    [=](lost_atom, std::vector<task_outcome>& outcomes) {
      // Those held ahead first: none of them starts on the lost worker.
      auto& placed = self->state.placed;
      std::stable_partition(outcomes.begin(), outcomes.end(), [&](auto& x) {
        auto i = placed.find(x.ref);
        return i != placed.end() && i->second.ahead;
      });
      for (auto& outcome : outcomes)
        report(self, std::move(outcome), true);
      flush(self);
    },
    [=](exited_atom, std::int64_t pid, std::int32_t status) {
      for (auto& w : *self->state.workers)
        if (w.offer.pid == pid)
          self->send(w.port, exited_atom::value, status);
    },
  };
}

} // namespace router_impl

router_actor spawn_router(caf::actor_system& sys, context_ptr ctx,
                          database_actor db,
                          std::shared_ptr<started_attempts> started) {
  return sys.spawn(router_impl::router, std::move(ctx), std::move(db),
                   std::move(started));
}

} // namespace cafmq::actors
