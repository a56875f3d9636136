// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// The owners (channel actors) of the attempts that the pool or the router
// runs: which ones it monitors, and the outcomes it owes them, gathered
// while one message is handled and sent when it is handled, one message per
// owner.

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include <caf/actor_addr.hpp>
#include <caf/actor_cast.hpp>

#include "cafmq/actors/detail/protocol.hpp"

namespace cafmq::actors {

class owners {
public:
  /// The sender of the current message, an owner; monitored by `self`
  /// from its first message on.
  template <class Self>
  channel_actor sender(Self* self) {
    auto owner = caf::actor_cast<channel_actor>(self->current_sender());
    if (seen_.insert(owner.address()).second)
      self->monitor(owner);
    return owner;
  }

  /// True, once, if `source` is an owner seen before (its down message).
  bool forget(const caf::actor_addr& source) {
    return seen_.erase(source) > 0;
  }

  /// Queues an outcome for its owner.
  void add(const channel_actor& owner, task_outcome outcome) {
    auto i = std::find_if(mail_.begin(), mail_.end(),
                          [&](auto& x) { return x.first == owner; });
    if (i == mail_.end()) {
      mail_.emplace_back(owner, std::vector<task_outcome>{});
      i = mail_.end() - 1;
    }
    i->second.push_back(std::move(outcome));
  }

  /// Sends the queued outcomes, one message per owner.
  template <class Self>
  void send(Self* self) {
    for (auto& [owner, outcomes] : mail_)
      self->send(owner, done_atom::value, std::move(outcomes));
    mail_.clear();
  }

private:
  std::set<caf::actor_addr> seen_;
  std::vector<std::pair<channel_actor, std::vector<task_outcome>>> mail_;
};

} // namespace cafmq::actors
