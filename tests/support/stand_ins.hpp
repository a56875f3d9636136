// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// Stand-ins for the peers of one actor, for testing that actor on its own
// through its typed interface. Each records what it receives in its state
// (read it with the fixture's `deref`) and answers from fields a test sets.
// Also: handler actors for pool and runtime tests, and `unit_fixture`, which
// stops every actor a test spawned.
// Include after defining CAF_SUITE and including caf/test/dsl.hpp.

#include <set>
#include <unordered_set>
#include <utility>
#include <vector>

#include "runtime/started_attempts.hpp"
#include "support/runtime_fixture.hpp"

namespace cafmq::test {

struct dispatcher_log {
  std::vector<std::pair<std::string, finished_counts>> done;
  int rescans = 0;
  // The keys of retire requests, and the answer to them.
  std::vector<std::string> retires;
  bool retire = true;
  // The answer to channels_atom, and how often it was asked.
  std::vector<channel_actor> channels;
  int channel_asks = 0;
  // What the router said joined workers offer: names and capacity.
  std::vector<std::pair<std::vector<std::string>, std::int32_t>> offers;
  // How often a restarted keeper was passed on.
  int new_keepers = 0;
  // How often it was asked to renew out of turn.
  int renewals = 0;
};

using dispatcher_stand_in = dispatcher_actor::stateful_base<dispatcher_log>;

inline dispatcher_actor::behavior_type
stand_in_dispatcher(dispatcher_actor::stateful_pointer<dispatcher_log> self) {
  return {
    [](ready_atom, const std::string&, const std::vector<uuid>&) {},
    [=](rescan_atom) { ++self->state.rescans; },
    [](spawn_atom, const std::string&) {
      claim_request none; // no slot: limit 0
      none.limit = 0;
      return none;
    },
    [](spawn_atom, const claim_result&) {},
    [=](renew_atom) { ++self->state.renewals; },
    [](cancel_atom, const std::string&, const std::string&, const uuid&) {},
    [](wake_atom, std::uint64_t) {},
    [=](done_atom, const std::string& key, const finished_counts& x) {
      self->state.done.emplace_back(key, x);
    },
    [=](retire_atom, const std::string& key) {
      self->state.retires.push_back(key);
      return self->state.retire;
    },
    [=](channels_atom) {
      ++self->state.channel_asks;
      return self->state.channels;
    },
    [](pause_atom, const std::string&, bool) { return true; },
    [](events_atom, const event_sink_actor&) {},
    [=](offer_atom, const std::vector<std::string>& names, std::int32_t n) {
      self->state.offers.emplace_back(names, n);
    },
    [](peers_atom, const database_actor&) {},
    [](peers_atom, ready_atom, const database_actor&) {},
    [](peers_atom, const pool_actor&) {},
    [](peers_atom, const router_actor&) {},
    [](peers_atom, const completer_actor&) {},
    [=](peers_atom, const lease_keeper_actor&) { ++self->state.new_keepers; },
    [](drain_atom) { return true; },
    [](abandon_atom) {},
    [](stats_atom) { return runner_stats{}; },
  };
}

// What the pool or the router was told.
struct runner_log {
  std::vector<std::vector<claimed_task>> runs;
  std::vector<std::pair<attempt_ref, cancel_reason>> cancels;
  // Outcomes from worker ports (router), those of lost workers included.
  std::vector<std::vector<task_outcome>> done;
  // How many of them came from ports that lost their worker (router).
  int losses = 0;
  int stops = 0;
};

using pool_stand_in = pool_actor::stateful_base<runner_log>;

inline pool_actor::behavior_type
stand_in_pool(pool_actor::stateful_pointer<runner_log> self) {
  return {
    [=](run_atom, const std::vector<claimed_task>& xs) {
      self->state.runs.push_back(xs);
    },
    [=](cancel_atom, const attempt_ref& ref, cancel_reason why) {
      self->state.cancels.emplace_back(ref, why);
    },
    [=](stop_atom) { ++self->state.stops; },
    [](collect_atom) {},
    [](done_atom, const task_outcome&) {},
    [](kill_atom, const attempt_ref&) {},
    [](abandon_atom) {},
    [](peers_atom, const database_actor&) {},
  };
}

using router_stand_in = router_actor::stateful_base<runner_log>;

inline router_actor::behavior_type
stand_in_router(router_actor::stateful_pointer<runner_log> self) {
  return {
    [=](run_atom, const std::vector<claimed_task>& xs) {
      self->state.runs.push_back(xs);
    },
    [=](cancel_atom, const attempt_ref& ref, cancel_reason why) {
      self->state.cancels.emplace_back(ref, why);
    },
    [=](stop_atom) { ++self->state.stops; },
    [](peers_atom, const database_actor&) {},
    [](peers_atom, const offer_listener_actor&) {},
    [](join_atom, const worker_offer&,
       const worker_actor&) -> caf::result<worker_link_actor> {
      return caf::make_error(caf::sec::invalid_argument);
    },
    [=](done_atom, const std::vector<task_outcome>& xs) {
      self->state.done.push_back(xs);
    },
    [=](lost_atom, const std::vector<task_outcome>& xs) {
      self->state.done.push_back(xs);
      ++self->state.losses;
    },
    [](exited_atom, std::int64_t, std::int32_t) {},
  };
}

struct completer_log {
  std::vector<std::vector<task_outcome>> records;
};

using completer_stand_in = completer_actor::stateful_base<completer_log>;

inline completer_actor::behavior_type
stand_in_completer(completer_actor::stateful_pointer<completer_log> self) {
  return {
    [=](record_atom, const std::vector<task_outcome>& xs) {
      self->state.records.push_back(xs);
    },
    [](flush_atom) { return true; },
    [](peers_atom, const database_actor&) {},
    [](retry_atom) {},
  };
}

struct lease_keeper_log {
  // What the channels hold, by what they said (hold minus unhold).
  std::unordered_set<attempt_ref> held;
  int holds = 0;
  int unholds = 0;
};

using lease_keeper_stand_in
  = lease_keeper_actor::stateful_base<lease_keeper_log>;

inline lease_keeper_actor::behavior_type stand_in_lease_keeper(
  lease_keeper_actor::stateful_pointer<lease_keeper_log> self) {
  return {
    [=](hold_atom, const std::vector<attempt_ref>& xs) {
      ++self->state.holds;
      self->state.held.insert(xs.begin(), xs.end());
    },
    [=](unhold_atom, const std::vector<attempt_ref>& xs) {
      ++self->state.unholds;
      for (auto& x : xs)
        self->state.held.erase(x);
    },
    [](renew_atom) {},
  };
}

struct channel_log {
  std::vector<std::vector<task_outcome>> done;
  std::vector<std::vector<attempt_ref>> written;
  // How each written attempt was taken, in the order they were written.
  std::vector<written_as> written_as_told;
  std::vector<std::vector<attempt_ref>> lost;
  std::vector<std::pair<uuid, cancel_reason>> cancels;
  std::vector<std::pair<attempt_ref, cancel_reason>> deadlines;
};

using channel_stand_in = channel_actor::stateful_base<channel_log>;

inline channel_actor::behavior_type
stand_in_channel(channel_actor::stateful_pointer<channel_log> self) {
  return {
    [](run_atom, const std::vector<claimed_task>&) {},
    [=](cancel_atom, const uuid& id, cancel_reason why) {
      self->state.cancels.emplace_back(id, why);
    },
    [=](deadline_atom, const attempt_ref& ref, cancel_reason why) {
      self->state.deadlines.emplace_back(ref, why);
    },
    [=](done_atom, const std::vector<task_outcome>& xs) {
      self->state.done.push_back(xs);
    },
    [=](written_atom, const std::vector<written_attempt>& xs) {
      std::vector<attempt_ref> refs;
      for (auto& x : xs) {
        refs.push_back(x.ref);
        self->state.written_as_told.push_back(x.as);
      }
      self->state.written.push_back(std::move(refs));
    },
    [=](lost_atom, const std::vector<attempt_ref>& xs) {
      self->state.lost.push_back(xs);
    },
    [](peers_atom, const pool_actor&) {},
    [](peers_atom, const router_actor&) {},
    [](peers_atom, const completer_actor&) {},
    [](peers_atom, const lease_keeper_actor&) {},
    [](pause_atom, bool) {},
    [](events_atom, const event_sink_actor&) {},
    [](stop_atom) {},
    [](abandon_atom) {},
    [](idle_atom, std::uint64_t) {},
  };
}

struct worker_log {
  std::vector<std::vector<claimed_task>> runs;
  std::vector<std::pair<attempt_ref, cancel_reason>> cancels;
  int stops = 0;
};

using worker_stand_in = worker_actor::stateful_base<worker_log>;

// A worker node's actor that records what its port sends.
inline worker_actor::behavior_type
stand_in_worker(worker_actor::stateful_pointer<worker_log> self) {
  return {
    [=](run_atom, const std::vector<claimed_task>& xs) {
      self->state.runs.push_back(xs);
    },
    [=](cancel_atom, const attempt_ref& ref, cancel_reason why) {
      self->state.cancels.emplace_back(ref, why);
    },
    [=](stop_atom) { ++self->state.stops; },
  };
}

// A handler actor that works until it is asked to stop, then reports that.
inline handler_actor::behavior_type
cooperative_handler(handler_actor::pointer self) {
  auto pending = std::make_shared<typed_response_promise<bool>>();
  return {
    [=](run_atom, const claimed_task&) {
      *pending = self->make_response_promise<bool>();
      return *pending;
    },
    [=](cancel_atom, cancel_reason why) {
      pending->deliver(
        make_error(errc::handler_failed, "stopped: " + to_string(why)));
    },
  };
}

// A handler actor that never answers, whatever it is told.
inline handler_actor::behavior_type
stubborn_handler(handler_actor::pointer self) {
  auto pending = std::make_shared<typed_response_promise<bool>>();
  return {
    [=](run_atom, const claimed_task&) {
      *pending = self->make_response_promise<bool>();
      return *pending;
    },
    [](cancel_atom, cancel_reason) {},
  };
}

using refs = std::vector<attempt_ref>;

inline attempt_ref ref_of(const claimed_task& x) {
  return {x.id, x.attempt};
}

inline std::vector<attempt_ref> refs_of(const std::vector<claimed_task>& xs) {
  std::vector<attempt_ref> result;
  for (auto& x : xs)
    result.push_back(ref_of(x));
  return result;
}

inline std::vector<attempt_ref> refs_of(const std::vector<task_outcome>& xs) {
  std::vector<attempt_ref> result;
  for (auto& x : xs)
    result.push_back(x.ref);
  return result;
}

inline std::set<uuid> ids_of(const std::vector<attempt_ref>& xs) {
  std::set<uuid> result;
  for (auto& x : xs)
    result.insert(x.id);
  return result;
}

// Checks that `x` is a failure of `task`'s attempt, retryable or not.
inline void check_failed(const task_outcome& x, const claimed_task& task,
                         bool retryable) {
  CAF_CHECK_EQUAL(x.ref, ref_of(task));
  CAF_CHECK_EQUAL(x.kind, task_outcome::failed);
  CAF_CHECK_EQUAL(x.retryable, retryable);
}

inline task_outcome outcome(const claimed_task& x, task_outcome::kind_t kind,
                            std::string error = {}) {
  task_outcome result;
  result.ref = ref_of(x);
  result.kind = kind;
  result.error = std::move(error);
  return result;
}

// Tests one actor against stand-ins: the runtime fixture's options, task
// definitions and log, without a runtime.
struct unit_fixture : fixture {
  ~unit_fixture() override {
    for (auto& x : spawned)
      anon_send_exit(x, exit_reason::user_shutdown);
    sched.run();
  }

  context_ptr context() const {
    return std::make_shared<runtime_context>(cfg);
  }

  // The started attempts a pool or router under test counts.
  std::shared_ptr<started_attempts> started
    = std::make_shared<started_attempts>();

  // Spawns a stand-in that the fixture stops at the end of the test.
  template <class F>
  auto stand_in(F fun) {
    auto result = sys.spawn(fun);
    spawned.push_back(actor_cast<actor>(result));
    return result;
  }

  // Spawns a stand-in database that keeps its record in `x`.
  database_actor stand_in_db(std::shared_ptr<fake_db_log> x) {
    return stand_in(
      [x](database_actor::pointer self) { return fake_db(self, x); });
  }

  // Lets the actor under test start; stops it at the end of the test.
  template <class Handle>
  Handle keep(Handle x) {
    spawned.push_back(actor_cast<actor>(x));
    sched.run();
    return x;
  }

  // The next `T` in self's mailbox, if there is one.
  template <class T>
  caf::optional<T> next() {
    caf::optional<T> result;
    self->receive([&](T& x) { result = std::move(x); },
                  after(std::chrono::seconds{0}) >> [] {});
    return result;
  }

  // The `T` waiting in self's mailbox; the test fails without one.
  template <class T>
  T answer() {
    auto result = next<T>();
    CAF_REQUIRE(result);
    return std::move(*result);
  }

  std::vector<actor> spawned;
  // Attempts for a test to pass around.
  claimed_task a = make_task("ok");
  claimed_task b = make_task("ok");
  claimed_task c = make_task("ok");
};

} // namespace cafmq::test
