// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE watches
#include <caf/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <dirent.h>
#include <fstream>
#include <mutex>

#include <caf/all.hpp>

#include "cafmq/actors/node.hpp"
#include "cafmq/actors/protocol.hpp"
#include "cafmq/actors/runner.hpp"
#include "cafmq/error.hpp"
#include "support/process.hpp"
#include "support/queue_helpers.hpp"
#include "support/runner_fixture.hpp"
#include "support/watch_tally.hpp"

// Watches through the runtime actor, from this process and from a remote
// client (cafmq-e2e watches): a runtime embedded with spawn_runner in this
// process's actor system, published as a node.

using namespace cafmq;
using namespace cafmq::actors;
using namespace cafmq::test;
using namespace std::chrono_literals;

namespace {

constexpr auto watch_secret = "watch secret";

// Threads of this process.
int process_threads() {
  int n = 0;
  if (auto dir = opendir("/proc/self/task")) {
    while (auto entry = readdir(dir))
      if (entry->d_name[0] != '.')
        ++n;
    closedir(dir);
  }
  return n;
}

struct watches_fixture : runner_fixture {
  watches_fixture() {
    add_message_types(sys_cfg);
    enable_nodes(sys_cfg);
    sys = std::make_unique<caf::actor_system>(sys_cfg);
  }

  // The runtime's connections to this test's database (every one is named
  // "cafmq ROLE"), without the listener's short-lived probe.
  std::string runtime_connections() {
    return query_value<std::string>(
      "SELECT coalesce(string_agg(application_name, ',' ORDER BY "
      "application_name), '') FROM pg_stat_activity WHERE datname = "
      "current_database() AND application_name LIKE 'cafmq %' AND "
      "application_name <> 'cafmq probe'");
  }

  static int count_names(const std::string& names) {
    return names.empty() ? 0
                         : 1
                             + static_cast<int>(
                               std::count(names.begin(), names.end(), ','));
  }

  caf::actor_system_config sys_cfg;
  std::unique_ptr<caf::actor_system> sys;
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(watches_tests, watches_fixture)

CAF_TEST(a thousand watches share one thread and one connection) {
  constexpr int local_n = 800;
  constexpr int remote_n = 200;
  auto release = std::make_shared<std::atomic<bool>>(false);
  auto tasks = std::make_shared<registry>();
  tasks->add({"gate",
              [release](current_task&) {
                while (!*release)
                  std::this_thread::sleep_for(1ms);
                return caf::error{};
              },
              {}});
  std::vector<spawn_builder> xs(local_n + remote_n, spawn_builder{"gate"});
  std::vector<uuid> ids;
  for (auto& x : xs) {
    ids.push_back(uuid::random());
    x.id(ids.back());
  }
  spawn_or_throw(*conn, xs);
  auto cfg = config(tasks);
  cfg.node = "watches";
  cfg.max_watches = local_n + remote_n;
  auto rt = spawn_runner(*sys, cfg);
  CAF_REQUIRE(rt);
  node_options opts;
  opts.port = 0;
  opts.secret = watch_secret;
  auto port = publish_node(*sys, *rt, opts, logger{});
  CAF_REQUIRE(port);
  // The runtime is busy and its connections are open before counting (the
  // admin connection fires the schedules at the start, the upkeep one asks
  // for a vacuum a second after it).
  wait_for([&] {
    auto names = runtime_connections();
    return count("running") >= 4
           && names.find("cafmq admin") != std::string::npos
           && names.find("cafmq upkeep") != std::string::npos
           && names.find("cafmq claim") != std::string::npos
           && names.find("cafmq listen") != std::string::npos
           && names.find("cafmq renew") != std::string::npos
           && names.find("cafmq write") != std::string::npos;
  });
  auto connections_before = runtime_connections();
  auto threads_before = process_threads();
  // 800 watches from this process, 200 from a remote client.
  auto local = std::make_shared<watch_tally>();
  for (int i = 0; i < local_n; ++i)
    caf::anon_send(*rt, watch_atom::value, ids[i],
                   sys->spawn(count_watch_end, local));
  scratch dir;
  {
    std::ofstream out{dir.dir + "/ids"};
    for (int i = local_n; i < local_n + remote_n; ++i)
      out << to_string(ids[i]) << '\n';
  }
  auto remote = start_process(std::string{"exec "} + CAFMQ_E2E_WATCHES + " "
                              + std::to_string(*port) + " '" + watch_secret
                              + "' '" + dir.dir + "'");
  std::string remote_out;
  char buf[512];
  while (remote_out.find("WATCHING") == std::string::npos
         && fgets(buf, sizeof(buf), remote) != nullptr)
    remote_out += buf;
  CAF_CHECK(remote_out.find("WATCHING " + std::to_string(remote_n))
            != std::string::npos);
  wait_for([&] { return local->first + local->errors == local_n; });
  CAF_CHECK_EQUAL(local->errors.load(), 0);
  // All 1,000 run: at most 2 more connections, no thread per watch.
  auto connections_after = runtime_connections();
  auto connections
    = count_names(connections_after) - count_names(connections_before);
  auto threads = process_threads() - threads_before;
  CAF_MESSAGE("1000 watches added "
              << connections << " connections (" << connections_before << " -> "
              << connections_after << ") and " << threads << " threads");
  CAF_CHECK_LESS_OR_EQUAL(connections, 2);
  CAF_CHECK_LESS_OR_EQUAL(threads, 16);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.watches"),
                  local_n + remote_n);
  // One more is refused, with a clear error.
  caf::scoped_actor self{*sys};
  self->send(*rt, watch_atom::value, ids[0],
             caf::actor_cast<watcher_actor>(self));
  self->receive(
    [&](watch_atom, const caf::error& err) {
      CAF_CHECK_EQUAL(code_of(err), errc::limit_reached);
      CAF_MESSAGE(render(err));
      CAF_CHECK(render(err).find("max-watches: 1000") != std::string::npos);
    },
    [&](status_atom, const task_status&) {
      CAF_FAIL("a watch over max-watches was served");
    },
    caf::after(60s) >> [&] { CAF_FAIL("no answer within 60 s"); });
  // Each watch ends when its task ends.
  *release = true;
  wait_for([&] { return local->ended() == local_n; });
  CAF_CHECK_EQUAL(local->completed.load(), local_n);
  CAF_CHECK_EQUAL(finish_process(remote, remote_out), 0);
  CAF_MESSAGE(remote_out);
  CAF_CHECK(remote_out.find("ENDED completed=200 other=0 errors=0")
            != std::string::npos);
  wait_for([&] {
    return query_value<int>("SELECT count(*) FROM cafmq.watches") == 0;
  });
  // Watches still open when the runtime stops end with a clear error.
  auto never = spawn_builder{"not_served_here"}.spawn(*conn)->id;
  // A watcher that ends frees its watch: its task is no longer watched.
  auto watched = [&] {
    return query_value<int>("SELECT count(*) FROM cafmq.watches");
  };
  auto gone = sys->spawn(count_watch_end, std::make_shared<watch_tally>());
  caf::anon_send(*rt, watch_atom::value, never, gone);
  wait_for([&] { return watched() == 1; });
  caf::anon_send_exit(gone, caf::exit_reason::user_shutdown);
  wait_for([&] { return watched() == 0; });
  auto left = std::make_shared<watch_tally>();
  for (int i = 0; i < 5; ++i)
    caf::anon_send(*rt, watch_atom::value, never,
                   sys->spawn(count_watch_end, left));
  wait_for([&] { return left->first == 5; });
  self->request(*rt, 60s, stop_atom::value)
    .receive([](bool) {}, [](caf::error& err) { CAF_FAIL(render(err)); });
  wait_for([&] { return left->ended() == 5; });
  CAF_CHECK_EQUAL(left->errors.load(), 5);
  std::lock_guard<std::mutex> guard{left->mtx};
  for (auto& err : left->errs)
    CAF_CHECK_EQUAL(code_of(err), errc::runtime_stopped);
  CAF_MESSAGE(render(left->errs.front()));
}

CAF_TEST_FIXTURE_SCOPE_END()
