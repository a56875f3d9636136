// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE worker
#include <caf/test/dsl.hpp>

#include "nodes/worker_impl.hpp"
#include "support/stand_ins.hpp"

using namespace caf;
using namespace cafmq;
using namespace cafmq::actors;
using namespace cafmq::test;
using namespace std::chrono_literals;

namespace {

struct port_log {
  std::vector<std::vector<task_outcome>> done;
};

using port_stand_in = worker_link_actor::stateful_base<port_log>;

worker_link_actor::behavior_type
stand_in_port(worker_link_actor::stateful_pointer<port_log> self) {
  return {
    [=](done_atom, const std::vector<task_outcome>& xs) {
      self->state.done.push_back(xs);
    },
    [](checkpt_atom, const attempt_ref&, const checkpoint&) { return true; },
    [](renew_atom, const attempt_ref&, timespan) { return true; },
  };
}

struct node_log {
  std::vector<worker_offer> joins;
  worker_link_actor port;
  bool refuse = false;
};

using node_stand_in = node_actor::stateful_base<node_log>;

// A runner's node actor that only lets workers join, to its port.
node_actor::behavior_type
stand_in_node(node_actor::stateful_pointer<node_log> self) {
  auto no = [] {
    return make_error(sec::unexpected_message);
  };
  return {
    [=](stop_atom) -> result<bool> { return no(); },
    [=](stats_atom) -> result<runner_stats> { return no(); },
    [=](cancel_atom, const uuid&) -> result<std::string> { return no(); },
    [=](status_atom, const uuid&) -> result<task_status> { return no(); },
    [](watch_atom, const uuid&, const watcher_actor&) {},
    [=](pause_atom, const std::string&) -> result<bool> { return no(); },
    [=](resume_atom, const std::string&) -> result<bool> { return no(); },
    [=](pause_atom, const std::string&, const std::string&) -> result<bool> {
      return no();
    },
    [=](resume_atom, const std::string&, const std::string&) -> result<bool> {
      return no();
    },
    [=](spawn_atom, const spawn_request&) -> result<spawn_reply> {
      return no();
    },
    [=](spawn_atom, const std::vector<spawn_request>&)
      -> result<std::vector<spawn_reply>> { return no(); },
    [](subscribe_atom, const event_filter&, const event_actor&) {
      return true;
    },
    [=](join_atom, const worker_offer& offer,
        const worker_actor&) -> result<worker_link_actor> {
      self->state.joins.push_back(offer);
      if (self->state.refuse)
        return make_error(errc::invalid_argument, "no room for " + offer.node);
      return self->state.port;
    },
  };
}

struct worker_fixture : unit_fixture {
  worker_fixture() {
    auto tasks = std::make_shared<registry>();
    tasks->add({"remote", [](current_task&) { return caf::error{}; }, {}});
    tasks->add(
      {"remote_boom",
       [](current_task&) { return make_error(errc::handler_failed, "boom"); },
       {}});
    wcfg.node = "w1";
    wcfg.tasks = tasks;
    wcfg.capacity = 3;
    wcfg.log = cfg.log;
    wcfg.on_join = [this](const caf::error& err) {
      joined.push_back(err);
    };
    CAF_REQUIRE(!check(wcfg));
    deref<node_stand_in>(node).state.port = port;
    exec = std::make_shared<executor>(0);
    worker = keep(spawn_worker(sys, node, wcfg, exec));
    sched.run();
  }

  port_log& port_seen() {
    return deref<port_stand_in>(port).state;
  }

  std::vector<claimed_task> run(std::vector<std::string> names) {
    std::vector<claimed_task> xs;
    for (auto& name : names)
      xs.push_back(make_task(name));
    send_as(port, worker, run_atom::value, xs);
    sched.run();
    return xs;
  }

  worker_config wcfg;
  std::vector<caf::error> joined;
  worker_link_actor port = stand_in(stand_in_port);
  node_actor node = stand_in(stand_in_node);
  worker_actor worker;
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(worker_tests, worker_fixture)

CAF_TEST(a worker reports its join : accepted or refused with the reason) {
  CAF_REQUIRE_EQUAL(joined.size(), 1u);
  CAF_CHECK_EQUAL(render(joined[0]), render(caf::error{}));
  auto refusing = stand_in(stand_in_node);
  deref<node_stand_in>(refusing).state.refuse = true;
  keep(spawn_worker(sys, refusing, wcfg, exec));
  sched.run();
  CAF_REQUIRE_EQUAL(joined.size(), 2u);
  CAF_CHECK_EQUAL(code_of(joined[1]), errc::invalid_argument);
  CAF_CHECK(render(joined[1]).find("no room for w1") != std::string::npos);
}

CAF_TEST(attempts that reach a worker before its join answer are reported) {
  // The runner's port can send work before the worker has read the answer
  // to its join (the router places waiting attempts when a worker joins):
  // their outcomes must still reach the port.
  auto exec2 = std::make_shared<executor>(0);
  auto late = spawn_worker(sys, node, wcfg, exec2);
  spawned.push_back(actor_cast<actor>(late));
  std::vector<claimed_task> xs{make_task("remote")};
  send_as(port, late, run_atom::value, xs);
  // The worker starts and asks to join; if it takes the work now, its
  // handler ends before the answer to the join comes back.
  sched.run_once();
  exec2->run_queued();
  sched.run();
  exec2->run_queued();
  sched.run();
  auto& done = port_seen().done;
  CAF_REQUIRE_EQUAL(done.size(), 1u);
  CAF_CHECK_EQUAL(refs_of(done[0]), refs_of(xs));
}

CAF_TEST(a worker joins with its names and capacity) {
  auto& joins = deref<node_stand_in>(node).state.joins;
  CAF_REQUIRE_EQUAL(joins.size(), 1u);
  CAF_CHECK_EQUAL(joins[0].node, "w1");
  CAF_CHECK_EQUAL(joins[0].names,
                  std::vector<std::string>({"remote", "remote_boom"}));
  CAF_CHECK_EQUAL(joins[0].capacity, 3);
}

CAF_TEST(a worker reports the outcomes of a batch in one message) {
  auto xs = run({"remote", "remote_boom"});
  CAF_CHECK(port_seen().done.empty());
  CAF_CHECK_EQUAL(exec->run_queued(), 2u);
  sched.run();
  auto& done = port_seen().done;
  CAF_REQUIRE_EQUAL(done.size(), 1u);
  CAF_REQUIRE_EQUAL(done[0].size(), 2u);
  CAF_CHECK_EQUAL(done[0][0].ref, ref_of(xs[0]));
  CAF_CHECK_EQUAL(done[0][0].kind, task_outcome::completed);
  check_failed(done[0][1], xs[1], true);
  CAF_CHECK(done[0][1].error.find("boom") != std::string::npos);
}

CAF_TEST(a cancelled attempt that has not started ends without running) {
  auto xs = run({"remote", "remote"});
  send_as(port, worker, cancel_atom::value, ref_of(xs[0]),
          cancel_reason::cancelled);
  sched.run();
  auto& done = port_seen().done;
  CAF_REQUIRE_EQUAL(done.size(), 1u);
  check_failed(done[0][0], xs[0], false);
  CAF_CHECK_EQUAL(exec->run_queued(), 1u);
  sched.run();
  CAF_REQUIRE_EQUAL(done.size(), 2u);
  CAF_CHECK_EQUAL(done[1][0].ref, ref_of(xs[1]));
}

CAF_TEST(a stop gives back what has not started and the worker quits) {
  auto xs = run({"remote"});
  send_as(port, worker, stop_atom::value);
  sched.run();
  auto& done = port_seen().done;
  CAF_REQUIRE_EQUAL(done.size(), 1u);
  CAF_CHECK_EQUAL(done[0][0].kind, task_outcome::released);
  CAF_CHECK(actor_cast<abstract_actor*>(worker)->getf(
    abstract_actor::is_terminated_flag));
}

CAF_TEST(a worker quits with the reason when its runner is lost) {
  run({"remote"});
  anon_send_exit(port, exit_reason::remote_link_unreachable);
  sched.run();
  CAF_CHECK(actor_cast<abstract_actor*>(worker)->getf(
    abstract_actor::is_terminated_flag));
  CAF_CHECK(logged("runner node lost"));
  // Its handler learns it when it starts: it does not run.
  CAF_CHECK_EQUAL(exec->run_queued(), 0u);
}

CAF_TEST_FIXTURE_SCOPE_END()
