// SPDX-License-Identifier: BSD-3-Clause
// The latency of a node's event stream: from the runtime seeing an event
// (task_event::at, when a channel actor hands an attempt to a handler or
// learns its outcome is written) to a subscriber in another process
// receiving it over the io middleman (loopback, no TLS). Both processes
// read the same system clock.
//
//   cafmq-bench-node-events [N=500] [INTERVAL_MS=10]
//
// Starts itself again as a runner node (publishing on a free port), then
// subscribes to the node's events of one channel and spawns N no-op tasks
// through the node, one every INTERVAL_MS; prints p50 / p95 / p99 / max of
// the spawned, started and completed events. Needs CAFMQ_DATABASE_URL.

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <caf/all.hpp>
#include <unistd.h>

#include "cafmq/actors/node.hpp"
#include "cafmq/actors/node_client.hpp"
#include "cafmq/actors/runner.hpp"
#include "cafmq/error.hpp"

using namespace cafmq;
using namespace cafmq::actors;
using namespace std::chrono_literals;

namespace {

constexpr auto secret = "bench";

int run_node(const std::string& url) {
  auto tasks = std::make_shared<registry>();
  task_definition noop{
    "bench_event", [](current_task&) { return caf::error{}; }, {}};
  noop.blocking = false;
  tasks->add(noop);
  runner_config cfg;
  cfg.database_url = url;
  cfg.tasks = tasks;
  cfg.publish.port = 0;
  cfg.publish.secret = secret;
  auto r = runner::start(cfg);
  if (!r) {
    std::cerr << "node: " << render(r.error()) << std::endl;
    return 1;
  }
  std::cout << "PORT " << *(*r)->node_port() << std::endl;
  (*r)->wait();
  return 0;
}

double micros(caf::timespan x) {
  return std::chrono::duration<double, std::micro>(x).count();
}

void print(const char* what, std::vector<caf::timespan> xs) {
  if (xs.empty())
    return;
  std::sort(xs.begin(), xs.end());
  auto at = [&](double q) {
    return micros(
      xs[std::min(xs.size() - 1, static_cast<size_t>(q * xs.size()))]);
  };
  std::printf("%-10s n=%zu p50=%.0fus p95=%.0fus p99=%.0fus max=%.0fus\n", what,
              xs.size(), at(0.50), at(0.95), at(0.99), micros(xs.back()));
}

} // namespace

int main(int argc, char** argv) {
  auto env = std::getenv("CAFMQ_DATABASE_URL");
  if (env == nullptr) {
    std::cerr << "set CAFMQ_DATABASE_URL\n";
    return 2;
  }
  if (argc == 2 && std::string{argv[1]} == "--node")
    return run_node(env);
  int n = argc > 1 ? std::atoi(argv[1]) : 500;
  auto interval = std::chrono::milliseconds{argc > 2 ? std::atoi(argv[2]) : 10};
  auto child = popen((std::string{"exec "} + argv[0] + " --node").c_str(), "r");
  unsigned port = 0;
  char line[256];
  while (port == 0 && fgets(line, sizeof(line), child) != nullptr)
    std::sscanf(line, "PORT %u", &port);
  if (port == 0) {
    std::cerr << "the node did not start\n";
    return 1;
  }
  caf::actor_system_config cfg;
  add_message_types(cfg);
  enable_nodes(cfg);
  caf::actor_system sys{cfg};
  node_endpoint where;
  where.port = static_cast<std::uint16_t>(port);
  where.secret = secret;
  auto node = connect_node(sys, where, 10s);
  if (!node) {
    std::cerr << render(node.error()) << '\n';
    return 1;
  }
  auto channel = "bench-events-" + std::to_string(getpid());
  std::vector<caf::timespan> spawned;
  std::vector<caf::timespan> started;
  std::vector<caf::timespan> completed;
  std::promise<void> live;
  auto live_future = live.get_future();
  std::thread listener{[&] {
    auto err = subscribe_on_node(
      sys, *node, {event_filter::channel_name, channel},
      [&](const std::vector<task_event>& xs) {
        auto now = caf::make_timestamp();
        for (auto& x : xs)
          (x.kind == task_event::spawned   ? spawned
           : x.kind == task_event::started ? started
                                           : completed)
            .push_back(now - x.at);
        return static_cast<int>(completed.size()) < n;
      },
      std::chrono::minutes{5}, [&] { live.set_value(); });
    if (err)
      std::cerr << render(err) << '\n';
  }};
  // Spawn once the node confirmed the subscription.
  if (live_future.wait_for(30s) != std::future_status::ready) {
    std::cerr << "the subscription was not confirmed within 30 s\n";
    listener.join();
    return 1;
  }
  spawn_request req;
  req.name = "bench_event";
  req.channel_name = channel;
  for (int i = 0; i < n; ++i) {
    auto reply = ask_node<spawn_reply>(sys, *node, 10s, spawn_atom::value, req);
    if (!reply) {
      std::cerr << render(reply.error()) << '\n';
      break;
    }
    std::this_thread::sleep_for(interval);
  }
  listener.join();
  std::printf("event stream latency, runtime -> subscriber in another "
              "process (%d tasks, one every %lld ms)\n",
              n, static_cast<long long>(interval.count()));
  print("spawned", spawned);
  print("started", started);
  print("completed", completed);
  auto all = started;
  all.insert(all.end(), spawned.begin(), spawned.end());
  all.insert(all.end(), completed.begin(), completed.end());
  print("all", all);
  ask_node<bool>(sys, *node, 60s, stop_atom::value);
  pclose(child);
  return 0;
}
