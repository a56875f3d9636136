// SPDX-License-Identifier: BSD-3-Clause
// The client node of the three-process example: a CAF application with no
// database access and no handlers. Through the runner node's typed handle
// it spawns a greeting and watches it to its end, spawns a long job, waits
// for its start on the event stream, cancels it and watches it fail, reads
// the runner's stats and stops the runner. Exits non-zero when anything
// ends otherwise.
//
//   cafmq-nodes-client PORT

#include <iostream>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include "cafmq/actors/node.hpp"
#include "cafmq/actors/node_client.hpp"
#include "cafmq/error.hpp"
#include "tasks.hpp"

namespace {

using namespace cafmq::actors;
using namespace std::chrono_literals;

struct config : caf::actor_system_config {
  config() {
    cafmq::actors::add_message_types(*this);
    enable_nodes(*this);
  }
};

int fail(const std::string& what, const caf::error& err) {
  std::cerr << "client: " << what << ": " << cafmq::render(err) << std::endl;
  return 1;
}

// Watches `id` to its end, printing each state; returns the last one.
caf::expected<cafmq::task_status>
watch(caf::actor_system& sys, const node_actor& node, const cafmq::uuid& id) {
  cafmq::task_status last;
  auto err = watch_on_node(
    sys, node, id,
    [&](const cafmq::task_status& st) {
      std::cout << "client: " << st.name << " is " << to_string(st.state)
                << std::endl;
      last = st;
    },
    30s);
  if (err)
    return err;
  return last;
}

int run(caf::actor_system& sys, std::uint16_t port) {
  node_endpoint where;
  where.port = port;
  where.secret = nodes_example::secret();
  auto node = connect_node(sys, where, 10s);
  if (!node)
    return fail("connect", node.error());
  // A greeting, spawned by name with a JSON payload, watched to its end.
  spawn_request greet;
  greet.name = "greet";
  greet.json = std::string{"\"Ada\""};
  auto greeted
    = ask_node<spawn_reply>(sys, *node, 10s, spawn_atom::value, greet);
  if (!greeted)
    return fail("spawn greet", greeted.error());
  auto end = watch(sys, *node, greeted->id);
  if (!end)
    return fail("watch greet", end.error());
  if (end->state != cafmq::task_state::completed)
    return fail("greet", cafmq::make_error(cafmq::errc::handler_failed,
                                           "did not complete"));
  // A long job: subscribe to its task name's events first, and spawn once
  // the node confirmed the subscription; wait for the job's start on the
  // event stream, then cancel it.
  caf::scoped_actor self{sys};
  event_filter jobs;
  jobs.by = event_filter::task_name;
  jobs.value = "long_job";
  caf::expected<bool> live{caf::error{}};
  self
    ->request(*node, 10s, subscribe_atom::value, jobs,
              caf::actor_cast<event_actor>(self))
    .receive([&](bool x) { live = x; },
             [&](caf::error& err) { live = node_error(std::move(err)); });
  if (!live || !*live)
    return fail("subscribe",
                live ? cafmq::make_error(cafmq::errc::invalid_argument,
                                         "subscription refused")
                     : live.error());
  spawn_request job;
  job.name = "long_job";
  caf::expected<spawn_reply> spawned{caf::error{}};
  self->request(*node, 10s, spawn_atom::value, job)
    .receive([&](spawn_reply& x) { spawned = x; },
             [&](caf::error& err) { spawned = node_error(std::move(err)); });
  if (!spawned)
    return fail("spawn long_job", spawned.error());
  bool started = false;
  bool waited = false;
  self->receive_while([&] { return !started && !waited; })(
    [&](event_atom, const std::vector<task_event>& events) {
      for (auto& x : events)
        if (x.id == spawned->id && x.kind == task_event::started) {
          std::cout << "client: event: long_job started on " << x.node
                    << std::endl;
          started = true;
        }
    },
    caf::after(30s) >> [&] { waited = true; });
  if (!started)
    return fail("events", cafmq::make_error(cafmq::errc::node_unreachable,
                                            "no start event within 30 s"));
  auto cancelled
    = ask_node<std::string>(sys, *node, 10s, cancel_atom::value, spawned->id);
  if (!cancelled)
    return fail("cancel", cancelled.error());
  std::cout << "client: cancel: " << *cancelled << std::endl;
  end = watch(sys, *node, spawned->id);
  if (!end)
    return fail("watch long_job", end.error());
  if (cafmq::is_final(end->state) && end->state != cafmq::task_state::completed)
    std::cout << "client: long_job ended " << to_string(end->state) << ": "
              << end->last_error.value_or("-") << std::endl;
  else
    return fail("long_job", cafmq::make_error(cafmq::errc::handler_failed,
                                              "was not stopped"));
  auto stats = ask_node<runner_stats>(sys, *node, 10s, stats_atom::value);
  if (!stats)
    return fail("stats", stats.error());
  std::cout << "client: runner stats: " << stats->completed << " completed, "
            << stats->failed << " failed" << std::endl;
  auto stopped = ask_node<bool>(sys, *node, 30s, stop_atom::value);
  if (!stopped)
    return fail("stop", stopped.error());
  std::cout << "client: runner stopped" << std::endl;
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: cafmq-nodes-client PORT\n";
    return 2;
  }
  config cfg;
  caf::actor_system sys{cfg};
  return run(sys, static_cast<std::uint16_t>(std::stoi(argv[1])));
}
