// SPDX-License-Identifier: BSD-3-Clause
// The pool's joined workers: placing attempts of names that only workers
// run, their waiting lists, joins and losses (see pool.hpp).

#include <algorithm>
#include <set>

#include <caf/all.hpp>

#include "cafmq/actors/detail/worker_port.hpp"
#include "cafmq/error.hpp"
#include "runtime/attempt.hpp"
#include "runtime/pool_state.hpp"

namespace cafmq::actors::pool_impl {

namespace {

bool offers(const worker_entry& w, const std::string& name) {
  auto& names = w.offer.names;
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool runs_locally(const pool_state& st, const std::string& name) {
  return st.ctx->actor_task(name) != nullptr
         || (st.ctx->cfg.tasks && st.ctx->cfg.tasks->find(name) != nullptr);
}

// The least loaded worker with room that offers `name`, or nullptr.
worker_entry* free_worker(pool_ptr self, const std::string& name) {
  worker_entry* result = nullptr;
  for (auto& w : *self->state.workers)
    if (w.load < w.offer.capacity && offers(w, name)
        && (result == nullptr || w.load < result->load))
      result = &w;
  return result;
}

void send_to(pool_ptr self, worker_entry& w, claimed_task task,
             channel_actor owner) {
  add_running(self, task, owner).port = w.port;
  ++w.load;
  arm_timeout(task, owner);
  w.batch.push_back(std::move(task));
}

// Gives back the waiting attempts of names no worker offers any more.
void give_back_unoffered(pool_ptr self) {
  auto& st = self->state;
  for (auto i = st.remote_waiting.begin(); i != st.remote_waiting.end();) {
    if (runs_remotely(self, i->first)) {
      ++i;
      continue;
    }
    for (auto& [task, owner] : i->second)
      add_outcome(self, owner,
                  unstarted_outcome({task.id, task.attempt},
                                    cancel_reason::shutdown, nullptr));
    i = st.remote_waiting.erase(i);
  }
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

} // namespace

bool runs_remotely(pool_ptr self, const std::string& name) {
  auto& st = self->state;
  if (runs_locally(st, name))
    return false;
  return std::any_of(st.workers->begin(), st.workers->end(),
                     [&](auto& w) { return offers(w, name); });
}

void place_remotely(pool_ptr self, claimed_task task, channel_actor owner) {
  auto& st = self->state;
  auto& waiting = st.remote_waiting[task.name];
  auto w = waiting.empty() ? free_worker(self, task.name) : nullptr;
  if (w == nullptr) {
    waiting.emplace_back(std::move(task), std::move(owner));
    return;
  }
  send_to(self, *w, std::move(task), std::move(owner));
}

void pump_remote(pool_ptr self) {
  auto& st = self->state;
  for (auto i = st.remote_waiting.begin(); i != st.remote_waiting.end();) {
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
      i = st.remote_waiting.erase(i);
    else
      ++i;
  }
}

caf::result<worker_link_actor> join_worker(pool_ptr self, worker_offer offer,
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
                        caf::actor_cast<pool_actor>(self), st.db);
  self->monitor(port);
  std::string names;
  for (auto& name : offer.names)
    names += (names.empty() ? "" : ",") + name;
  st.ctx->log(
    log_level::info, "worker joined",
    {{"worker", offer.node}, {"names", names}, {"capacity", offer.capacity}});
  st.workers->push_back(worker_entry{port, std::move(offer), 0, {}});
  report_offer(self);
  pump_remote(self);
  flush(self);
  // The worker sees the part of the port it reports to.
  return worker_link_actor{port};
}

bool worker_down(pool_ptr self, const caf::down_msg& msg) {
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
  for (auto& kvp : *st.running)
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

void report_offer(pool_ptr self) {
  auto& st = self->state;
  if (!st.offers_to)
    return;
  // Names this runner runs itself never go to a worker (see
  // runs_remotely): a worker adds capacity only for the others.
  std::set<std::string> names;
  std::int32_t capacity = 0;
  for (auto& w : *st.workers) {
    bool serves = false;
    for (auto& name : w.offer.names)
      if (!runs_locally(st, name)) {
        names.insert(name);
        serves = true;
      }
    if (serves)
      capacity += w.offer.capacity;
  }
  self->send(st.offers_to, offer_atom::value,
             std::vector<std::string>{names.begin(), names.end()}, capacity);
}

void stop_workers(pool_ptr self) {
  auto& st = self->state;
  for (auto& kvp : st.remote_waiting)
    for (auto& [task, owner] : kvp.second)
      add_outcome(self, owner,
                  unstarted_outcome({task.id, task.attempt},
                                    cancel_reason::shutdown, nullptr));
  st.remote_waiting.clear();
  for (auto& w : *st.workers)
    self->send(w.port, stop_atom::value);
}

} // namespace cafmq::actors::pool_impl
