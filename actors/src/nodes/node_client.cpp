// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/actors/node_client.hpp"

#include <caf/all.hpp>

namespace cafmq::actors {

namespace {

caf::error limit_passed(caf::timespan limit) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(limit);
  return make_error(errc::node_unreachable,
                    "no end within " + std::to_string(ms.count()) + " ms");
}

} // namespace

caf::error node_error(caf::error err) {
  if (err == caf::sec::request_timeout || err == caf::sec::request_receiver_down
      || err == caf::sec::remote_linking_failed
      || err == caf::exit_reason::remote_link_unreachable)
    return make_error(errc::node_unreachable,
                      "no answer from the node: " + caf::to_string(err));
  return err;
}

caf::error node_lost(const caf::down_msg& msg) {
  return make_error(errc::node_unreachable,
                    "lost the node: " + caf::to_string(msg.reason));
}

caf::error watch_on_node(caf::actor_system& sys, const node_actor& node,
                         const uuid& id,
                         const std::function<void(const task_status&)>& f,
                         caf::timespan limit) {
  caf::scoped_actor self{sys};
  self->monitor(node);
  self->send(node, watch_atom::value, id, caf::actor_cast<watcher_actor>(self));
  auto deadline = std::chrono::steady_clock::now() + limit;
  caf::error result;
  for (auto done = false; !done;) {
    auto left = deadline - std::chrono::steady_clock::now();
    if (left <= caf::timespan{0})
      return limit_passed(limit);
    self->receive(
      [&](status_atom, const task_status& x) {
        f(x);
        done = is_final(x.state);
      },
      [&](watch_atom, caf::error& err) {
        result = std::move(err);
        done = true;
      },
      [&](const caf::down_msg& msg) {
        result = node_lost(msg);
        done = true;
      },
      caf::after(left) >>
        [&] {
          result = limit_passed(limit);
          done = true;
        });
  }
  return result;
}

caf::error
subscribe_on_node(caf::actor_system& sys, const node_actor& node,
                  const event_filter& filter,
                  const std::function<bool(const std::vector<task_event>&)>& f,
                  caf::timespan limit, const std::function<void()>& live) {
  caf::scoped_actor self{sys};
  self->monitor(node);
  // The node's answer (true: live) comes back as a message, ahead of any
  // event.
  self->send(node, subscribe_atom::value, filter,
             caf::actor_cast<event_actor>(self));
  auto deadline = std::chrono::steady_clock::now() + limit;
  caf::error result;
  for (auto done = false; !done;) {
    auto left = deadline - std::chrono::steady_clock::now();
    if (left <= caf::timespan{0})
      break;
    self->receive(
      [&](bool confirmed) {
        if (!confirmed) {
          result = make_error(errc::invalid_argument,
                              "the node refused the subscription");
          done = true;
        } else if (live) {
          live();
        }
      },
      [&](event_atom, const std::vector<task_event>& xs) { done = !f(xs); },
      [&](caf::error& err) {
        result = node_error(std::move(err));
        done = true;
      },
      [&](const caf::down_msg& msg) {
        result = node_lost(msg);
        done = true;
      },
      caf::after(left) >> [&] { done = true; });
  }
  return result;
}

std::string to_string(task_event::kind_t x) {
  switch (x) {
    case task_event::spawned:
      return "spawned";
    case task_event::started:
      return "started";
    case task_event::completed:
      return "completed";
    case task_event::failed:
      return "failed";
    case task_event::released:
      return "released";
    case task_event::cancelled:
      return "cancelled";
    case task_event::lost:
      return "lost";
  }
  return "unknown";
}

} // namespace cafmq::actors
