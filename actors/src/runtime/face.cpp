// SPDX-License-Identifier: BSD-3-Clause
// The runtime's public face: the runtime_actor that applications and nodes
// hold. It answers no call itself: each goes to the actor that serves it
// (the admin database, the dispatcher, the event hub, the watch service,
// the router), as its supervisor last told it, and the stop and the
// counters go to the supervisor. It spawns the supervisor, linked, and
// ends with it.

#include <algorithm>

#include <caf/all.hpp>

#include "cafmq/actors/detail/supervisor.hpp"
#include "cafmq/error.hpp"
#include "runtime/supervisor_state.hpp"

namespace cafmq::actors {

namespace runtime_impl {

using face_ptr = face_actor::stateful_pointer<face_state>;

// A spawn through the admin database, in a transaction of its own.
void spawn_normally(face_ptr self, const spawn_request& req,
                    caf::typed_response_promise<spawn_reply> rp) {
  auto& st = self->state;
  self
    ->request(st.admin_db, st.request_timeout, spawn_atom::value, req, st.sink)
    .then([=](spawn_reply& x) mutable { rp.deliver(x); },
          [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
}

// Direct dispatch: the dispatcher gave a slot (`claim`); the admin database
// spawns the task and claims it in one transaction, and the dispatcher
// gets what the claim took (nothing after an error), which frees the slot.
void spawn_dispatched(face_ptr self, const spawn_request& req,
                      const claim_request& claim,
                      caf::typed_response_promise<spawn_reply> rp) {
  auto& st = self->state;
  auto dispatcher = st.dispatcher;
  self
    ->request(st.admin_db, st.request_timeout, spawn_atom::value, req, st.sink,
              claim)
    .then(
      [=](spawn_reply& x, claim_result& claimed) mutable {
        self->send(dispatcher, spawn_atom::value, std::move(claimed));
        rp.deliver(x);
      },
      [=](caf::error& err) mutable {
        self->send(dispatcher, spawn_atom::value, claim_result{});
        rp.deliver(std::move(err));
      });
}

face_actor::behavior_type face(face_ptr self, runner_config cfg,
                               runtime_parts parts) {
  auto& st = self->state;
  st.request_timeout = cfg.request_timeout;
  st.direct_dispatch = cfg.direct_dispatch;
  st.supervisor = self->spawn(supervisor, std::move(cfg), std::move(parts),
                              caf::actor_cast<face_actor>(self));
  self->link_to(st.supervisor);
  self->monitor(st.supervisor);
  // Actors start on the scheduler, later: no call is served (they wait in
  // the mailbox) before the supervisor has started the actors that serve
  // them. Restarts are told later (peers_atom).
  self->request(st.supervisor, caf::infinite, peers_atom::value)
    .await(
      [=](database_actor& admin_db, dispatcher_actor& dispatcher,
          event_hub_actor& events, watch_service_actor& watches,
          router_actor& router) {
        auto& st = self->state;
        st.admin_db = std::move(admin_db);
        st.dispatcher = std::move(dispatcher);
        st.events = std::move(events);
        st.watches = std::move(watches);
        st.router = std::move(router);
      },
      [=](caf::error& err) { self->quit(std::move(err)); });
  self->set_down_handler([=](caf::down_msg& msg) {
    auto& st = self->state;
    if (msg.source == st.supervisor.address()) {
      self->quit(msg.reason);
      return;
    }
    // A subscriber ended: a restarted hub no longer needs it.
    auto& xs = st.subscriptions;
    xs.erase(
      std::remove_if(xs.begin(), xs.end(),
                     [&](auto& x) { return x.second.address() == msg.source; }),
      xs.end());
  });
  return {
    [=](stop_atom) {
      return self->delegate(self->state.supervisor, stop_atom::value);
    },
    [=](stats_atom) {
      return self->delegate(self->state.supervisor, stats_atom::value);
    },
    [=](cancel_atom, const uuid& id) {
      auto& st = self->state;
      // While someone subscribes, the admin database reports the cancel.
      if (st.sink)
        return self->delegate(st.admin_db, cancel_atom::value, id, st.sink);
      return self->delegate(st.admin_db, cancel_atom::value, id);
    },
    [=](status_atom, const uuid& id) {
      return self->delegate(self->state.admin_db, status_atom::value, id);
    },
    [=](watch_atom, const uuid& id, const watcher_actor& watcher) {
      auto& st = self->state;
      if (st.watches)
        self->send(st.watches, watch_atom::value, id, watcher);
      else
        self->send(watcher, watch_atom::value,
                   make_error(errc::runtime_stopped,
                              "this runtime serves no watches (no database "
                              "listener)"));
    },
    [=](pause_atom, const std::string& kind, const std::string& name) {
      return self->delegate(self->state.admin_db, pause_atom::value, kind, name,
                            true);
    },
    [=](resume_atom, const std::string& kind, const std::string& name) {
      return self->delegate(self->state.admin_db, pause_atom::value, kind, name,
                            false);
    },
    [=](pause_atom, const std::string& name) {
      return self->delegate(self->state.dispatcher, pause_atom::value, name,
                            true);
    },
    [=](resume_atom, const std::string& name) {
      return self->delegate(self->state.dispatcher, pause_atom::value, name,
                            false);
    },
    // While someone subscribes (the sink is valid), the admin database
    // reports the spawns. A spawn of a name this runtime runs asks the
    // dispatcher for a slot first (direct dispatch).
    [=](spawn_atom, const spawn_request& req) {
      auto& st = self->state;
      auto rp = self->make_response_promise<spawn_reply>();
      if (!st.direct_dispatch || !st.dispatcher) {
        spawn_normally(self, req, rp);
        return rp;
      }
      // No timeout: a slot granted to a request that timed out would stay
      // counted; an error means the dispatcher ended (a new one counts
      // nothing of it).
      self->request(st.dispatcher, caf::infinite, spawn_atom::value, req.name)
        .then(
          [=](claim_request& claim) {
            if (claim.limit > 0)
              spawn_dispatched(self, req, claim, rp);
            else
              spawn_normally(self, req, rp);
          },
          [=](caf::error&) { spawn_normally(self, req, rp); });
      return rp;
    },
    [=](spawn_atom, const std::vector<spawn_request>& reqs) {
      auto& st = self->state;
      auto rp = self->make_response_promise<std::vector<spawn_reply>>();
      self
        ->request(st.admin_db, st.request_timeout, spawn_atom::value, reqs,
                  st.sink)
        .then(
          [=](std::vector<spawn_reply>& xs) mutable {
            rp.deliver(std::move(xs));
          },
          [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
      return rp;
    },
    [=](subscribe_atom, event_filter& filter, event_actor& subscriber) {
      auto& st = self->state;
      if (subscriber) {
        self->monitor(subscriber);
        st.subscriptions.emplace_back(filter, subscriber);
      }
      return self->delegate(st.events, subscribe_atom::value, std::move(filter),
                            std::move(subscriber));
    },
    [=](join_atom, const worker_offer& offer, const worker_actor& worker) {
      return self->delegate(self->state.router, join_atom::value, offer,
                            worker);
    },
    [=](exited_atom, std::int64_t pid, std::int32_t status) {
      self->send(self->state.router, exited_atom::value, pid, status);
    },
    [=](peers_atom, database_actor& x) { self->state.admin_db = std::move(x); },
    [=](peers_atom, dispatcher_actor& x) {
      self->state.dispatcher = std::move(x);
    },
    [=](peers_atom, event_hub_actor& x) {
      // A restarted hub: everything subscribed before is subscribed again.
      auto& st = self->state;
      if (x == st.events)
        return;
      st.events = std::move(x);
      for (auto& [filter, subscriber] : st.subscriptions)
        self
          ->request(st.events, caf::infinite, subscribe_atom::value, filter,
                    subscriber)
          .then([](bool) {}, [](caf::error&) {});
    },
    [=](events_atom, event_sink_actor& x) { self->state.sink = std::move(x); },
    [=](peers_atom, watch_service_actor& x) {
      self->state.watches = std::move(x);
    },
    [=](peers_atom, router_actor& x) { self->state.router = std::move(x); },
  };
}

} // namespace runtime_impl

runtime_actor spawn_runtime(caf::actor_system& sys, runner_config cfg,
                            runtime_parts parts) {
  return runtime_actor{
    sys.spawn(runtime_impl::face, std::move(cfg), std::move(parts))};
}

} // namespace cafmq::actors
