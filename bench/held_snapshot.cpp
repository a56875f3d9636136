// SPDX-License-Identifier: BSD-3-Clause
#include "held_snapshot.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <mutex>
#include <thread>
#include <tuple>
#include <utility>

#include <pqxx/pqxx>

#include "cafmq/actors/runner.hpp"
#include "cafmq/current_task.hpp"
#include "cafmq/error.hpp"
#include "cafmq/spawn.hpp"

namespace cafmq::bench {

namespace {

using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

[[noreturn]] void fail(const std::string& what) {
  std::cerr << "cafmq-bench held_snapshot: " << what << std::endl;
  std::exit(1);
}

std::int64_t ns_since(clock_type::time_point t0, clock_type::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t - t0).count();
}

// The size of the table the claim walks, with its indexes and TOAST, in MB,
// and its dead row versions.
std::pair<double, double> table_state(pqxx::connection& conn) {
  pqxx::nontransaction tx{conn};
  auto row
    = tx.exec1("SELECT pg_total_relation_size(t), (SELECT n_dead_tup FROM "
               "pg_stat_user_tables WHERE relid = t) FROM coalesce(to_regclass("
               "'cafmq.tasks_live'), 'cafmq.tasks'::regclass) t");
  return {row[0].as<double>() / (1024.0 * 1024.0), row[1].as<double>(0)};
}

} // namespace

std::vector<held_snapshot_window>
run_held_snapshot(const std::string& url, const held_snapshot_options& opts) {
  const int per_batch = std::max(1, opts.rate / 100);
  const auto batches = static_cast<int>(opts.length / 10ms);
  const int total = per_batch * batches;
  // Nanoseconds since t0 of each task's spawn call and handler start; -1:
  // not yet.
  std::vector<std::atomic<std::int64_t>> spawned(total);
  std::vector<std::atomic<std::int64_t>> started(total);
  for (int i = 0; i < total; ++i) {
    spawned[i] = -1;
    started[i] = -1;
  }
  std::atomic<int> runs{0};
  auto t0 = clock_type::now();
  auto tasks = std::make_shared<registry>();
  tasks->add(
    {"noop",
     [&](current_task& task) -> caf::error {
       auto now = clock_type::now();
       auto i = task.json<int>();
       if (!i || *i < 0 || *i >= total)
         return make_error(errc::handler_failed, "bad payload");
       std::int64_t none = -1;
       if (!started[*i].compare_exchange_strong(none, ns_since(t0, now)))
         fail("task " + std::to_string(*i) + " ran twice");
       ++runs;
       return caf::none;
     },
     {}});
  actors::runner_config cfg;
  cfg.database_url = url;
  cfg.tasks = tasks;
  if (opts.vacuum_dead_rows >= 0)
    cfg.vacuum_dead_rows = opts.vacuum_dead_rows;
  auto runner = actors::runner::start(cfg);
  if (!runner)
    fail("runner: " + render(runner.error()));
  pqxx::connection probe{url};
  // The session that holds the snapshot: from a quarter to three quarters.
  std::atomic<bool> done{false};
  std::thread holder;
  if (opts.hold)
    holder = std::thread{[&] {
      std::this_thread::sleep_until(t0 + opts.length / 4);
      pqxx::connection c{url};
      pqxx::work tx{c, "held"};
      tx.exec("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
      tx.exec("SELECT count(*) FROM cafmq.schedules");
      std::this_thread::sleep_until(t0 + opts.length * 3 / 4);
      tx.commit();
    }};
  // The load: a batch every 10 ms, each task's payload its number.
  std::thread spawner{[&] {
    pqxx::connection c{url};
    auto next = t0;
    for (int b = 0; b < batches && !done; ++b) {
      std::this_thread::sleep_until(next);
      next += 10ms;
      std::vector<spawn_builder> xs;
      for (int k = 0; k < per_batch; ++k)
        xs.push_back(spawn_builder{"noop"}.json(b * per_batch + k));
      auto at = ns_since(t0, clock_type::now());
      for (int k = 0; k < per_batch; ++k)
        spawned[b * per_batch + k] = at;
      if (auto r = spawn_many(c, xs); !r)
        fail("spawn: " + render(r.error()));
    }
  }};
  std::vector<held_snapshot_window> result;
  for (auto end = opts.window; end <= opts.length; end += opts.window) {
    std::this_thread::sleep_until(t0 + end);
    held_snapshot_window w;
    w.end_s = std::chrono::duration<double>(end).count();
    w.held = opts.hold && end - opts.window >= opts.length / 4
             && end <= opts.length * 3 / 4;
    std::tie(w.table_mb, w.dead_rows) = table_state(probe);
    result.push_back(w);
  }
  spawner.join();
  done = true;
  if (holder.joinable())
    holder.join();
  // Every task, then each window's throughput and p99 from the starts.
  for (int i = 0; i < 12000 && runs < total; ++i)
    std::this_thread::sleep_for(10ms);
  runner.value()->stop();
  if (runs != total)
    fail(std::to_string(runs.load()) + " of " + std::to_string(total)
         + " tasks ran");
  const auto window_ns = ns_since(t0, t0 + opts.window);
  std::vector<std::vector<double>> pickup(result.size());
  for (int i = 0; i < total; ++i) {
    auto k = static_cast<std::size_t>(started[i] / window_ns);
    if (k < pickup.size())
      pickup[k].push_back((started[i] - spawned[i]) / 1e6);
  }
  for (std::size_t k = 0; k < result.size(); ++k) {
    auto& xs = pickup[k];
    result[k].tasks_per_s
      = xs.size() / std::chrono::duration<double>(opts.window).count();
    if (!xs.empty()) {
      std::sort(xs.begin(), xs.end());
      result[k].p99_ms = xs[std::min(
        xs.size() - 1, static_cast<std::size_t>(0.99 * (xs.size() - 1) + 0.5))];
    }
  }
  return result;
}

} // namespace cafmq::bench
