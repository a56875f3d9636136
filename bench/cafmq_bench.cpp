// SPDX-License-Identifier: BSD-3-Clause
// cafmq-bench: measures cafmq the way shared/bench/peers measures
// graphile-worker and pg-boss: N no-op tasks with payload {"i": i}, an empty
// handler, median of REPS repetitions, each in a fresh database.
//
//   cafmq-bench [--n=20000] [--reps=3] [--parts=spawn,drain,...]
//               [--min=M --max=M --prefetch=P --takeover=MS]
//                                               (runner options; default:
//                                                the runner's defaults)
//               [--json=FILE --rep=R]  (also append JSON lines to FILE, in
//                                      the peers' style, numbered from rep R)
//               [--million=N]          (tasks of the "million" part)
//               [--payload=BYTES]      (the tasks' JSON payloads padded to
//                                      about BYTES; default {"i": i} alone)
//               [--samples=N]          (latency: timed spawns, default 100;
//                                      p99 of 100 is the second slowest)
//               [--tx-pool=C]          (drain_tx: the application's
//                                      connections and the runner's
//                                      concurrency, default 4, as the
//                                      same-shape reference's 4 clients)
//               [--prepare=0|1]        (cafmq's statements run prepared on
//                                      the runners' and the application's
//                                      connections; default 1)
//               [--db-prefix=P]        (the fresh databases' names: P0, P1,
//                                      ...; default cafmq_bench_)
//               [--rate=R --seconds=S] (held_snapshot: tasks spawned per
//                                      second, default 2000, and the run's
//                                      length, default 600)
//               [--vacuum-dead-rows=N] (the runners' vacuum_dead_rows; 0:
//                                      the live table left to autovacuum)
//
// Parts: spawn (one at a time, and all N in one batch), drain (runner with
// default options), drain_remote (the same with the handlers on a worker
// node joined over loopback TCP), drain_watch (drain with 100 tasks watched),
// drain_tx (each handler completes in its own transaction), latency (spawn ->
// handler start at 100 tasks/s on an idle runner), latency_direct (the
// same, each spawned through the runner's runtime actor: direct dispatch),
// raw (PostgreSQL's own
// single-commit and batched dequeue limits on this machine), million (not
// in the default set: --million=N tasks, default 1,000,000, spawned in
// chunks of 10,000 and drained, with the process's RSS sampled during the
// drain), held_snapshot and held_baseline (not in the default set: a
// steady load of --rate tasks/s for --seconds, with and without another
// session holding a REPEATABLE READ snapshot for the middle half; see
// held_snapshot.hpp). After every drain the harness checks that each task
// completed exactly once.

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include <sys/resource.h>

#include <caf/scoped_actor.hpp>
#include <pqxx/pqxx>

#include "cafmq/actors/protocol.hpp"
#include "cafmq/actors/runner.hpp"
#include "cafmq/actors/worker.hpp"
#include "cafmq/client.hpp"
#include "cafmq/current_task.hpp"
#include "cafmq/error.hpp"
#include "cafmq/migrate.hpp"
#include "cafmq/spawn.hpp"
#include "cafmq/workflow.hpp"
#include "held_snapshot.hpp"

namespace {

using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

std::string admin_url;
int n_tasks = 20000;
int reps = 3;
// Runner concurrency for the drains; 0 keeps the runner's defaults.
int min_concurrency = 0;
int max_concurrency = 0;
int prefetch = -1;
// drain_tx: connections of the application's pool (pgbench's clients in
// bench/complete_ref.sh); handlers beyond it wait for one.
int tx_pool = 4;
// takeover_interval in ms; -1 keeps the runner's default.
int takeover_ms = -1;
// --vacuum-dead-rows: runner_config::vacuum_dead_rows; -1 keeps the
// default (0: leave the live table to autovacuum).
int vacuum_dead_rows = -1;
// --prepare: connection_options::prepare_statements of the runners.
bool prepare_statements = true;
// --payload: the length the tasks' JSON payloads are padded to; 0: none.
int payload_bytes = 0;
// latency: how many timed spawns, 10 ms apart.
int latency_samples = 100;
// Declare the drains' handlers non-blocking (they run on the scheduler).
bool nonblocking = false;
// --metrics=ADDR: the drains' runners serve Prometheus metrics there.
std::string metrics_listen;
// JSON lines for bench/compare.mjs; empty: none.
std::string json_path;
int rep_number = 1;
// Tasks of the "million" part (--million=N).
int million_tasks = 1000000;
// held_snapshot: the offered load and the run's length.
int held_rate = 2000;
int held_seconds = 600;
// Names of the fresh databases: prefix + counter (--db-prefix=P).
std::string db_prefix = "cafmq_bench_";

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

[[noreturn]] void die(const std::string& what) {
  std::cerr << "cafmq-bench: " << what << std::endl;
  std::exit(1);
}

template <class T>
T check(caf::expected<T> x, const char* what) {
  if (!x)
    die(std::string{what} + ": " + cafmq::render(x.error()));
  return std::move(*x);
}

std::string with_database(const std::string& url, const std::string& db) {
  for (std::string prefix : {"postgresql://", "postgres://"}) {
    if (url.compare(0, prefix.size(), prefix) != 0)
      continue;
    auto path = url.find('/', prefix.size());
    auto query = url.find('?', prefix.size());
    auto end = std::min(path, query);
    return url.substr(0, end) + "/" + db
           + (query == std::string::npos ? "" : url.substr(query));
  }
  return url + " dbname=" + db;
}

// A fresh, migrated database for one measurement.
std::string fresh_database() {
  static int counter = 0;
  auto name = db_prefix + std::to_string(counter++);
  pqxx::connection admin{admin_url};
  pqxx::nontransaction tx{admin};
  tx.exec0("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
  tx.exec0("CREATE DATABASE " + name);
  auto url = with_database(admin_url, name);
  pqxx::connection c{url};
  check(cafmq::migrate(c), "migrate");
  return url;
}

// The payload of task i: {"i": i}, with "pad" up to about payload_bytes.
nlohmann::json noop_payload(int i) {
  nlohmann::json x{{"i", i}};
  auto size = static_cast<int>(x.dump().size());
  // ,"pad":"" adds 10 bytes.
  if (payload_bytes > size + 10)
    x["pad"]
      = std::string(static_cast<std::size_t>(payload_bytes - size - 10), 'x');
  return x;
}

// Tasks first .. first + n - 1.
std::vector<cafmq::spawn_builder> noop_tasks(int n, int first = 0) {
  std::vector<cafmq::spawn_builder> xs;
  xs.reserve(n);
  for (int i = first; i < first + n; ++i)
    xs.push_back(cafmq::spawn_builder{"noop"}.json(noop_payload(i)));
  return xs;
}

double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  return xs[xs.size() / 2];
}

double percentile(std::vector<double> xs, double p) {
  std::sort(xs.begin(), xs.end());
  auto idx = static_cast<size_t>(p * (xs.size() - 1) + 0.5);
  return xs[std::min(idx, xs.size() - 1)];
}

struct row {
  std::string what;
  std::string unit;
  std::vector<double> values;
};

std::vector<row> table;

// The peers' record kind of a measure.
std::string kind_of(const std::string& what) {
  if (what.rfind("spawn", 0) == 0)
    return "enqueue";
  if (what.rfind("drain", 0) == 0 || what.rfind("million", 0) == 0)
    return "drain";
  if (what.rfind("pickup", 0) == 0)
    return "latency";
  return "pgbench";
}

void report(const std::string& what, const std::string& unit, double value) {
  if (!json_path.empty()) {
    std::ofstream out{json_path, std::ios::app};
    out << nlohmann::json{{"peer", "cafmq"},       {"rep", rep_number},
                          {"kind", kind_of(what)}, {"mode", what},
                          {"value", value},        {"unit", unit}}
             .dump()
        << "\n";
  }
  for (auto& r : table)
    if (r.what == what) {
      r.values.push_back(value);
      return;
    }
  table.push_back({what, unit, {value}});
}

// --prepare: cafmq's statements run prepared on the application's
// connection `conn` too, while the result lives.
std::unique_ptr<cafmq::prepared_statements> prepare_on(pqxx::connection& conn) {
  if (!prepare_statements)
    return nullptr;
  return std::make_unique<cafmq::prepared_statements>(conn);
}

// -- spawn ------------------------------------------------------------------

void bench_spawn() {
  auto url = fresh_database();
  pqxx::connection conn{url};
  auto prepared = prepare_on(conn);
  auto n_one = std::min(n_tasks, 5000);
  auto xs = noop_tasks(n_one);
  auto t0 = clock_type::now();
  for (auto& x : xs)
    check(x.spawn(conn), "spawn");
  report("spawn one at a time", "tasks/s", n_one / seconds_since(t0));
  auto batch = noop_tasks(n_tasks);
  t0 = clock_type::now();
  check(cafmq::spawn_many(conn, batch), "spawn_many");
  report("spawn " + std::to_string(n_tasks) + " in one call", "tasks/s",
         n_tasks / seconds_since(t0));
}

// -- drain ------------------------------------------------------------------

// Checks that each of the n tasks completed in exactly one attempt.
void check_table(pqxx::connection& conn, int n) {
  pqxx::nontransaction tx{conn};
  auto r = tx.exec1("SELECT count(*) FILTER (WHERE state = 'completed' AND "
                    "attempt = 1), count(*) FROM cafmq.tasks");
  if (r[0].as<int>() != n || r[1].as<int>() != n)
    die("table check failed: " + std::to_string(r[0].as<int>()) + " of "
        + std::to_string(r[1].as<int>()) + " completed once, expected "
        + std::to_string(n));
}

// fan_in: the N tasks are a batch whose on_success callback (one more noop)
// waits for all of them.
enum class drain_kind { plain, watched, transactional, remote, fan_in };

// Runner start to the first handler, per drain (start-up cost).
std::vector<double> first_start_ms;

struct drain_rates {
  // Until the N-th handler started (the peers' definition).
  double started;
  // Until every outcome was written.
  double written;
  // CPU time of this process (the runner, its handler threads, and the
  // harness waiting) from runner start to stop, per task, in µs.
  double cpu_us;
};

// CPU time this process used so far (user and system), in µs.
double process_cpu_us() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto us = [](const timeval& t) {
    return t.tv_sec * 1e6 + t.tv_usec;
  };
  return us(usage.ru_utime) + us(usage.ru_stime);
}

// The application's own connections for handlers that complete in their
// transaction, opened before the clock starts (pgbench's references do not
// count connecting either); a handler borrows one for its transaction.
class connection_pool {
public:
  connection_pool(const std::string& url, int n) {
    for (int i = 0; i < n; ++i) {
      idle_.push_back(std::make_unique<pqxx::connection>(url));
      prepared_.push_back(prepare_on(*idle_.back()));
    }
  }

  template <class F>
  auto with(F f) {
    std::unique_ptr<pqxx::connection> c;
    {
      std::unique_lock<std::mutex> guard{mtx_};
      returned_.wait(guard, [&] { return !idle_.empty(); });
      c = std::move(idle_.back());
      idle_.pop_back();
    }
    auto give_back = [&] {
      std::lock_guard<std::mutex> guard{mtx_};
      idle_.push_back(std::move(c));
      returned_.notify_one();
    };
    try {
      auto result = f(*c);
      give_back();
      return result;
    } catch (...) {
      give_back();
      throw;
    }
  }

private:
  std::mutex mtx_;
  std::condition_variable returned_;
  std::vector<std::unique_ptr<pqxx::connection>> idle_;
  // --prepare: cafmq's statements run prepared on them (destroyed first).
  std::vector<std::unique_ptr<cafmq::prepared_statements>> prepared_;
};

// The drains' runner options from the command line (none: the defaults).
void apply_runner_options(cafmq::actors::runner_config& cfg) {
  if (min_concurrency > 0)
    cfg.min_concurrency = min_concurrency;
  if (max_concurrency > 0)
    cfg.max_concurrency = max_concurrency;
  if (prefetch >= 0)
    cfg.prefetch = prefetch;
  if (takeover_ms >= 0)
    cfg.takeover_interval = std::chrono::milliseconds{takeover_ms};
  if (vacuum_dead_rows >= 0)
    cfg.vacuum_dead_rows = vacuum_dead_rows;
  cfg.metrics_listen = metrics_listen;
  cfg.connection.prepare_statements = prepare_statements;
}

// Between spawning a backlog and draining it: statistics for the planner,
// and a checkpoint, so that the spawn's dirty pages and WAL are not written
// during the drain (a million spawned tasks leave about a gigabyte; the
// drain's own checkpoints still count).
void settle(pqxx::connection& conn) {
  pqxx::nontransaction{conn}.exec0(
    "VACUUM ANALYZE cafmq.tasks_live, cafmq.tasks_history");
  pqxx::nontransaction{conn}.exec0("CHECKPOINT");
}

// The drains' handler "noop": counts its start and succeeds (blocking
// unless --nonblocking).
template <class F>
void add_counting_noop(cafmq::registry& tasks, F count_start) {
  tasks.add({"noop",
             [count_start](cafmq::current_task&) {
               count_start();
               return caf::error{};
             },
             {},
             nullptr,
             !nonblocking});
}

drain_rates drain(drain_kind kind) {
  auto url = fresh_database();
  pqxx::connection conn{url};
  auto n = n_tasks;
  if (kind == drain_kind::fan_in) {
    cafmq::batch b;
    for (auto& x : noop_tasks(n_tasks))
      b.add(std::move(x));
    b.on_success(cafmq::spawn_builder{"noop"});
    check(b.spawn(conn), "batch spawn");
    ++n;
  } else {
    check(cafmq::spawn_many(conn, noop_tasks(n_tasks)), "spawn_many");
  }
  settle(conn);
  std::unique_ptr<pqxx::connection> watcher;
  if (kind == drain_kind::watched) {
    // 100 tasks watched by a listening session for the whole drain.
    watcher = std::make_unique<pqxx::connection>(url);
    pqxx::nontransaction w{*watcher};
    w.exec0("LISTEN cafmq_status");
    w.exec0("INSERT INTO cafmq.watches (task_id) SELECT id FROM cafmq.tasks "
            "ORDER BY random() LIMIT 100");
  }
  auto tasks = std::make_shared<cafmq::registry>();
  struct start_clock {
    std::atomic<int> count{0};
    clock_type::time_point first;
    clock_type::time_point last;
    std::mutex mtx;
    std::condition_variable all_started;
  };
  auto starts = std::make_shared<start_clock>();
  auto committed = std::make_shared<std::atomic<int>>(0);
  auto count_start = [starts, n] {
    auto i = starts->count.fetch_add(1) + 1;
    if (i == 1)
      starts->first = clock_type::now();
    if (i == n) {
      starts->last = clock_type::now();
      std::lock_guard<std::mutex> guard{starts->mtx};
      starts->all_started.notify_all();
    }
  };
  std::shared_ptr<connection_pool> app_connections;
  if (kind == drain_kind::transactional) {
    app_connections = std::make_shared<connection_pool>(url, tx_pool);
    tasks->add({"noop",
                [app_connections, count_start,
                 committed](cafmq::current_task& task) -> caf::error {
                  count_start();
                  return app_connections->with([&](pqxx::connection& c) {
                    pqxx::work tx{c};
                    auto err = task.complete(tx);
                    if (!err)
                      ++*committed;
                    return err;
                  });
                },
                {}});
  } else {
    add_counting_noop(*tasks, count_start);
  }
  cafmq::actors::runner_config cfg;
  cfg.database_url = url;
  cfg.tasks = tasks;
  std::shared_ptr<const cafmq::registry> remote_tasks;
  if (kind == drain_kind::remote) {
    // The runner runs no handler of "noop": a worker node does.
    remote_tasks = tasks;
    auto local = std::make_shared<cafmq::registry>();
    local->add(
      {"local_only", [](cafmq::current_task&) { return caf::error{}; }, {}});
    cfg.tasks = local;
    cfg.publish.port = 0;
    cfg.publish.secret = "bench";
  }
  if (kind == drain_kind::transactional) {
    // As many handlers as the application has connections (pgbench's 4
    // clients): more would only wait for one (32 waiting threads cost
    // 2,880 -> 2,500 tasks/s on 2 cores). --min / --max still override.
    cfg.min_concurrency = tx_pool;
    cfg.max_concurrency = tx_pool;
  }
  apply_runner_options(cfg);
  auto t0 = clock_type::now();
  auto cpu0 = process_cpu_us();
  auto runner = check(cafmq::actors::runner::start(cfg), "runner");
  std::unique_ptr<cafmq::actors::worker_node> worker;
  if (kind == drain_kind::remote) {
    // Its own actor system in this process, over loopback TCP like a
    // worker node on another host: every batch and outcome is serialized.
    cafmq::actors::worker_config wcfg;
    wcfg.node = "bench-worker";
    wcfg.tasks = remote_tasks;
    wcfg.capacity = cfg.max_concurrency;
    cafmq::actors::node_endpoint where;
    where.port = *runner->node_port();
    where.secret = cfg.publish.secret;
    worker = check(cafmq::actors::worker_node::start(wcfg, where), "worker");
  }
  // Polling the table would cost the database a scan; the runner counts.
  {
    // Waiting, not polling the runner: the harness stays out of the way
    // until the N-th handler started.
    std::unique_lock<std::mutex> guard{starts->mtx};
    starts->all_started.wait(guard, [&] { return starts->count >= n; });
  }
  // A completion in the handler's transaction is written when complete(tx)
  // returns; the runner counts the others.
  while ((kind == drain_kind::transactional
            ? static_cast<std::int64_t>(committed->load())
            : runner->stats().completed)
         < n)
    std::this_thread::sleep_for(2ms);
  runner->stop(); // writes the last outcomes
  auto secs = seconds_since(t0);
  auto cpu_us = (process_cpu_us() - cpu0) / n;
  worker.reset(); // its runner let it go
  if (watcher)
    watcher->get_notifs();
  check_table(conn, n);
  auto started = std::chrono::duration<double>(starts->last - t0).count();
  first_start_ms.push_back(
    std::chrono::duration<double, std::milli>(starts->first - t0).count());
  return {n / started, n / secs, cpu_us};
}

// -- scaling ----------------------------------------------------------------

// Resident memory of this process, in MB.
double rss_mb() {
  std::ifstream in{"/proc/self/status"};
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0)
      return std::stod(line.substr(6)) / 1024.0;
  return 0;
}

// Claim throughput at depth: `pending` no-op tasks are queued (inserted by
// SQL: a million spawns through the API would take minutes); a runner with
// default options runs the first 10,000. Returns tasks/s.
double drain_at_depth(int pending) {
  auto url = fresh_database();
  pqxx::connection conn{url};
  {
    pqxx::work tx{conn};
    tx.exec_params0(
      "INSERT INTO cafmq.tasks_live (id, seq, name, channel_name, "
      "channel_args, "
      "state, ordered, max_attempts, run_at, backoff, backoff_cap, "
      "payload_json) SELECT "
      // Time-ordered (version 7) ids, like spawn_builder's.
      "encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid()) placing "
      "substring(int8send((extract(epoch FROM clock_timestamp()) * "
      "1000)::bigint) FROM 3) FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid, "
      "nextval('cafmq.task_seq'), 'noop', '', '', "
      "'pending', false, 5, now(), '1s', '1min', jsonb_build_object('i', g) "
      "FROM generate_series(1, $1) g",
      pending);
    tx.commit();
  }
  pqxx::nontransaction{conn}.exec0(
    "VACUUM ANALYZE cafmq.tasks_live, cafmq.tasks_history");
  auto tasks = std::make_shared<cafmq::registry>();
  tasks->add({"noop", [](cafmq::current_task&) { return caf::error{}; }, {}});
  cafmq::actors::runner_config cfg;
  cfg.database_url = url;
  cfg.tasks = tasks;
  constexpr int measured = 10000;
  auto t0 = clock_type::now();
  auto runner = check(cafmq::actors::runner::start(cfg), "runner");
  while (runner->stats().completed < measured)
    std::this_thread::sleep_for(2ms);
  auto secs = seconds_since(t0);
  runner->stop();
  return measured / secs;
}

// Fairness and memory with 10,000 active channels: 5 tasks in each, spawned
// channel by channel (so queue order alone would serve them one after the
// other). Reports when each channel's last task started (the spread shows
// whether channels advance together) and the process's resident memory
// while the runner holds its channel actors.
void bench_channels() {
  constexpr int channels = 10000;
  constexpr int per_channel = 5;
  auto url = fresh_database();
  pqxx::connection conn{url};
  std::vector<cafmq::spawn_builder> xs;
  for (int c = 0; c < channels; ++c)
    for (int k = 0; k < per_channel; ++k)
      xs.push_back(cafmq::spawn_builder{"noop"}
                     .channel_name("c" + std::to_string(c))
                     .json(nlohmann::json{{"c", c}}));
  check(cafmq::spawn_many(conn, xs), "spawn_many");
  xs.clear();
  pqxx::nontransaction{conn}.exec0(
    "VACUUM ANALYZE cafmq.tasks_live, cafmq.tasks_history");
  std::vector<std::atomic<std::int64_t>> finished(channels);
  auto t0 = clock_type::now();
  auto tasks = std::make_shared<cafmq::registry>();
  tasks->add({"noop",
              [&](cafmq::current_task& task) -> caf::error {
                auto x = task.json<nlohmann::json>();
                auto at = std::chrono::duration_cast<std::chrono::microseconds>(
                            clock_type::now() - t0)
                            .count();
                finished[(*x)["c"].get<int>()] = at;
                return caf::none;
              },
              {}});
  cafmq::actors::runner_config cfg;
  cfg.database_url = url;
  cfg.tasks = tasks;
  auto rss_before = rss_mb();
  auto runner = check(cafmq::actors::runner::start(cfg), "runner");
  double rss_peak = 0;
  int channels_peak = 0;
  for (;;) {
    auto st = runner->stats();
    if (st.channels >= channels_peak) {
      channels_peak = st.channels;
      rss_peak = std::max(rss_peak, rss_mb());
    }
    if (st.completed >= channels * per_channel)
      break;
    std::this_thread::sleep_for(20ms);
  }
  auto secs = seconds_since(t0);
  runner->stop();
  std::vector<double> ends;
  for (auto& x : finished)
    ends.push_back(x.load() / 1e6);
  std::sort(ends.begin(), ends.end());
  report("10k channels: drain", "tasks/s", channels * per_channel / secs);
  report("10k channels: first channel done", "s", ends.front());
  report("10k channels: median channel done", "s", ends[ends.size() / 2]);
  report("10k channels: last channel done", "s", ends.back());
  report("10k channels: channel actors at peak", "actors", channels_peak);
  report("10k channels: process RSS at peak", "MB", rss_peak);
  report("10k channels: RSS growth from runner start", "MB",
         rss_peak - rss_before);
}

// -- a million tasks --------------------------------------------------------

// million_tasks no-op tasks spawned with spawn_many in chunks of 10,000 (one
// call each), then drained by a runner set up as drain(drain_kind::plain)
// sets it up, while a sampler thread reads the process's RSS every 250 ms
// and at 10 %, 50 % and 100 % of the handler starts. The harness keeps
// counters only (no per-task state), so what grows is the runner.
void bench_million() {
  constexpr int chunk = 10000;
  const int n = million_tasks;
  auto url = fresh_database();
  pqxx::connection conn{url};
  // The spawn calls only, as bench_spawn times them (not building the tasks).
  double spawn_secs = 0;
  for (int first = 0; first < n; first += chunk) {
    auto xs = noop_tasks(std::min(chunk, n - first), first);
    auto t0 = clock_type::now();
    check(cafmq::spawn_many(conn, xs), "spawn_many");
    spawn_secs += seconds_since(t0);
  }
  report("million: spawn in chunks of 10000", "tasks/s", n / spawn_secs);
  settle(conn);
  struct start_clock {
    std::atomic<int> count{0};
    clock_type::time_point last;
    std::mutex mtx;
    // Signalled at the 10 %, 50 % and 100 % start (sampler and harness).
    std::condition_variable progress;
  };
  auto starts = std::make_shared<start_clock>();
  const int at10 = std::max(1, n / 10);
  const int at50 = std::max(1, n / 2);
  auto count_start = [starts, n, at10, at50] {
    auto i = starts->count.fetch_add(1) + 1;
    if (i == n)
      starts->last = clock_type::now();
    if (i == at10 || i == at50 || i == n) {
      std::lock_guard<std::mutex> guard{starts->mtx};
      starts->progress.notify_all();
    }
  };
  auto tasks = std::make_shared<cafmq::registry>();
  add_counting_noop(*tasks, count_start);
  cafmq::actors::runner_config cfg;
  cfg.database_url = url;
  cfg.tasks = tasks;
  apply_runner_options(cfg);
  // RSS at the first sample at or past each point, and the maximum.
  double rss10 = 0;
  double rss50 = 0;
  double rss100 = 0;
  double rss_max = 0;
  bool sampling = true; // guarded by starts->mtx
  std::thread sampler{[&] {
    std::unique_lock<std::mutex> guard{starts->mtx};
    while (sampling) {
      auto c = starts->count.load();
      auto r = rss_mb();
      rss_max = std::max(rss_max, r);
      if (c >= at10 && rss10 == 0)
        rss10 = r;
      if (c >= at50 && rss50 == 0)
        rss50 = r;
      if (c >= n && rss100 == 0)
        rss100 = r;
      starts->progress.wait_for(guard, 250ms);
    }
  }};
  auto t0 = clock_type::now();
  auto runner = check(cafmq::actors::runner::start(cfg), "runner");
  {
    std::unique_lock<std::mutex> guard{starts->mtx};
    starts->progress.wait(guard, [&] { return starts->count >= n; });
  }
  while (runner->stats().completed < n)
    std::this_thread::sleep_for(2ms);
  runner->stop(); // writes the last outcomes
  auto secs = seconds_since(t0);
  {
    std::lock_guard<std::mutex> guard{starts->mtx};
    sampling = false;
    starts->progress.notify_all();
  }
  sampler.join();
  check_table(conn, n);
  auto started = std::chrono::duration<double>(starts->last - t0).count();
  report("million: drain, N-th handler start", "tasks/s", n / started);
  report("million: drain, all outcomes written", "tasks/s", n / secs);
  report("million: RSS at 10% started", "MB", rss10);
  report("million: RSS at 50% started", "MB", rss50);
  report("million: RSS at 100% started", "MB", rss100);
  report("million: RSS max", "MB", rss_max);
  report("million: RSS growth 10%→100%", "MB", rss100 - rss10);
}

// -- latency ----------------------------------------------------------------

// Spawn -> handler start on an idle runner, one spawn every 10 ms. With
// `direct`, each spawn goes through the runner's runtime actor, which
// claims it in the spawn's transaction (direct dispatch); else through a
// connection of the application's, as a peer's client would.
void bench_latency(bool direct) {
  auto url = fresh_database();
  std::mutex mtx;
  std::map<int, clock_type::time_point> started;
  auto tasks = std::make_shared<cafmq::registry>();
  tasks->add({"noop",
              [&](cafmq::current_task& task) -> caf::error {
                auto now = clock_type::now();
                auto i = task.json<nlohmann::json>();
                std::lock_guard<std::mutex> guard{mtx};
                started[(*i)["i"].get<int>()] = now;
                return caf::none;
              },
              {},
              nullptr,
              !nonblocking});
  cafmq::actors::runner_config cfg;
  cfg.database_url = url;
  cfg.tasks = tasks;
  if (prefetch >= 0)
    cfg.prefetch = prefetch;
  if (takeover_ms >= 0)
    cfg.takeover_interval = std::chrono::milliseconds{takeover_ms};
  cfg.connection.prepare_statements = prepare_statements;
  auto runner = check(cafmq::actors::runner::start(cfg), "runner");
  pqxx::connection conn{url};
  auto prepared = prepare_on(conn);
  auto rt = runner->handle();
  caf::scoped_actor self{caf::actor_cast<caf::actor>(rt)->home_system()};
  auto spawn = [&](int i) {
    auto payload = nlohmann::json{{"i", i}};
    if (!direct) {
      check(cafmq::spawn_builder{"noop"}.json(payload).spawn(conn), "spawn");
      return;
    }
    cafmq::actors::spawn_request req;
    req.name = "noop";
    req.json = payload.dump();
    self
      ->request(rt, std::chrono::seconds{30}, cafmq::actors::spawn_atom::value,
                req)
      .receive([](const cafmq::actors::spawn_reply&) {},
               [](caf::error& err) { die("spawn: " + cafmq::render(err)); });
  };
  // Warm-up as in the peers' method: 20 tasks (negative numbers) first.
  for (int i = 1; i <= 20; ++i)
    spawn(-i);
  for (;;) {
    {
      std::lock_guard<std::mutex> guard{mtx};
      if (started.size() == 20)
        break;
    }
    std::this_thread::sleep_for(5ms);
  }
  std::this_thread::sleep_for(200ms);
  const int samples = latency_samples;
  std::vector<clock_type::time_point> spawned(samples);
  std::vector<clock_type::time_point> returned(samples);
  auto next = clock_type::now();
  for (int i = 0; i < samples; ++i) {
    std::this_thread::sleep_until(next);
    next += 10ms;
    spawned[i] = clock_type::now();
    spawn(i);
    returned[i] = clock_type::now();
  }
  for (;;) {
    {
      std::lock_guard<std::mutex> guard{mtx};
      if (started.size() == static_cast<std::size_t>(20 + samples))
        break;
    }
    std::this_thread::sleep_for(5ms);
  }
  std::vector<double> ms;
  std::vector<double> commit_ms;
  for (int i = 0; i < samples; ++i) {
    ms.push_back(
      std::chrono::duration<double, std::milli>(started[i] - spawned[i])
        .count());
    commit_ms.push_back(
      std::chrono::duration<double, std::milli>(returned[i] - spawned[i])
        .count());
  }
  // The spawn call's own share (its transaction's commit) of the latency.
  std::string of
    = direct ? "pickup through the runtime (direct dispatch)" : "pickup";
  report(of + ": spawn call itself p50", "ms", percentile(commit_ms, 0.50));
  if (direct) {
    report(of + " p50", "ms", percentile(ms, 0.50));
    report(of + " p99", "ms", percentile(ms, 0.99));
    return;
  }
  report("pickup latency p50", "ms", percentile(ms, 0.50));
  report("pickup latency p95", "ms", percentile(ms, 0.95));
  report("pickup latency p99", "ms", percentile(ms, 0.99));
}

// -- raw PostgreSQL limits --------------------------------------------------

// The peers' pgbench references (shared/bench/peers/pgref.sh), run with 4
// client threads for 10 s on a job-shaped table of 1.5 million rows:
// b2 deletes one row per transaction; b3 locks 100 rows in one transaction
// and deletes them in a second one.
double raw_dequeue(bool batched) {
  auto url = fresh_database();
  {
    pqxx::connection c{url};
    pqxx::nontransaction tx{c};
    tx.exec0("CREATE TABLE ref_jobs (id bigserial PRIMARY KEY, kind text NOT "
             "NULL, payload jsonb NOT NULL, state smallint NOT NULL DEFAULT "
             "0, run_at timestamptz NOT NULL DEFAULT now(), locked_at "
             "timestamptz)");
    tx.exec0("CREATE INDEX ref_jobs_ready ON ref_jobs (id) WHERE state = 0");
    tx.exec0("INSERT INTO ref_jobs (kind, payload) SELECT 'noop', "
             "jsonb_build_object('i', g) FROM generate_series(1, 1500000) g");
    tx.exec0("VACUUM ANALYZE ref_jobs");
  }
  std::atomic<long> done{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> clients;
  for (int i = 0; i < 4; ++i)
    clients.emplace_back([&] {
      pqxx::connection c{url};
      while (!stop) {
        if (!batched) {
          pqxx::work tx{c};
          auto r = tx.exec(
            "DELETE FROM ref_jobs WHERE id = (SELECT id FROM ref_jobs WHERE "
            "state = 0 ORDER BY id FOR UPDATE SKIP LOCKED LIMIT 1) RETURNING "
            "id");
          tx.commit();
          done += static_cast<long>(r.size());
          continue;
        }
        std::string ids;
        {
          pqxx::work tx{c};
          ids = tx.exec1("WITH c AS (SELECT id FROM ref_jobs WHERE state = 0 "
                         "ORDER BY id FOR UPDATE SKIP LOCKED LIMIT 100), u AS "
                         "(UPDATE ref_jobs j SET state = 1, locked_at = now() "
                         "FROM c WHERE j.id = c.id RETURNING j.id) SELECT "
                         "coalesce(array_agg(id), '{}')::text FROM u")[0]
                  .c_str();
          tx.commit();
        }
        pqxx::work tx{c};
        auto r = tx.exec_params("DELETE FROM ref_jobs WHERE id = ANY ($1::"
                                "bigint[])",
                                ids);
        tx.commit();
        done += static_cast<long>(r.affected_rows());
      }
    });
  auto t0 = clock_type::now();
  std::this_thread::sleep_for(10s);
  stop = true;
  for (auto& t : clients)
    t.join();
  return done / seconds_since(t0);
}

} // namespace

// -- held snapshot ----------------------------------------------------------

// Prints the windows of one held_snapshot run and reports the mean
// throughput, worst p99 and last table size of the windows before the hold,
// during it and after it (for the baseline, the same windows).
void bench_held_snapshot(bool hold) {
  cafmq::bench::held_snapshot_options opts;
  opts.rate = held_rate;
  opts.length = std::chrono::seconds{held_seconds};
  opts.hold = hold;
  opts.vacuum_dead_rows = vacuum_dead_rows;
  auto windows = cafmq::bench::run_held_snapshot(fresh_database(), opts);
  std::string name = hold ? "held snapshot" : "held baseline";
  std::cout << name
            << ": window end (s), held, tasks/s, p99 ms, table MB, dead rows\n";
  for (const auto& w : windows)
    std::cout << "  " << std::fixed << std::setprecision(1) << w.end_s << "  "
              << (w.held ? "held" : "-   ") << "  " << w.tasks_per_s << "  "
              << std::setprecision(2) << w.p99_ms << "  "
              << std::setprecision(1) << w.table_mb << "  "
              << std::setprecision(0) << w.dead_rows << "\n";
  auto phase = [&](const char* what, double from, double to) {
    std::vector<double> rates;
    double p99 = 0;
    double mb = 0;
    for (const auto& w : windows)
      if (w.end_s > from * held_seconds && w.end_s <= to * held_seconds) {
        rates.push_back(w.tasks_per_s);
        p99 = std::max(p99, w.p99_ms);
        mb = w.table_mb;
      }
    if (rates.empty())
      return;
    double sum = 0;
    for (auto x : rates)
      sum += x;
    report(name + ", " + what + ": tasks/s", "tasks/s", sum / rates.size());
    report(name + ", " + what + ": worst p99", "ms", p99);
    report(name + ", " + what + ": table at its end", "MB", mb);
  };
  // The first window warms up; the hold runs from 1/4 to 3/4.
  phase("before", 0.1, 0.25);
  phase("middle", 0.25, 0.75);
  phase("after", 0.75, 1.0);
}

int main(int argc, char** argv) {
  // "scale", "channels" and "million" are not run by default (1M rows take
  // a while), nor "drain_remote".
  std::set<std::string> parts{"spawn",    "drain",   "drain_watch",
                              "drain_tx", "latency", "latency_direct",
                              "raw"};
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--n=", 0) == 0)
      n_tasks = std::stoi(arg.substr(4));
    else if (arg.rfind("--reps=", 0) == 0)
      reps = std::stoi(arg.substr(7));
    else if (arg.rfind("--min=", 0) == 0)
      min_concurrency = std::stoi(arg.substr(6));
    else if (arg.rfind("--max=", 0) == 0)
      max_concurrency = std::stoi(arg.substr(6));
    else if (arg.rfind("--prefetch=", 0) == 0)
      prefetch = std::stoi(arg.substr(11));
    else if (arg.rfind("--tx-pool=", 0) == 0)
      tx_pool = std::max(1, std::stoi(arg.substr(10)));
    else if (arg.rfind("--takeover=", 0) == 0)
      takeover_ms = std::stoi(arg.substr(11));
    else if (arg.rfind("--vacuum-dead-rows=", 0) == 0)
      vacuum_dead_rows = std::stoi(arg.substr(19));
    else if (arg == "--nonblocking")
      nonblocking = true;
    else if (arg.rfind("--metrics=", 0) == 0)
      metrics_listen = arg.substr(10);
    else if (arg.rfind("--json=", 0) == 0)
      json_path = arg.substr(7);
    else if (arg.rfind("--rep=", 0) == 0)
      rep_number = std::stoi(arg.substr(6));
    else if (arg.rfind("--payload=", 0) == 0)
      payload_bytes = std::max(0, std::stoi(arg.substr(10)));
    else if (arg.rfind("--samples=", 0) == 0)
      latency_samples = std::max(1, std::stoi(arg.substr(10)));
    else if (arg.rfind("--million=", 0) == 0)
      million_tasks = std::stoi(arg.substr(10));
    else if (arg.rfind("--rate=", 0) == 0)
      held_rate = std::max(100, std::stoi(arg.substr(7)));
    else if (arg.rfind("--seconds=", 0) == 0)
      held_seconds = std::max(60, std::stoi(arg.substr(10)));
    else if (arg.rfind("--prepare=", 0) == 0)
      prepare_statements = arg.substr(10) != "0";
    else if (arg.rfind("--db-prefix=", 0) == 0)
      db_prefix = arg.substr(12);
    else if (arg.rfind("--parts=", 0) == 0) {
      parts.clear();
      std::stringstream ss{arg.substr(8)};
      for (std::string p; std::getline(ss, p, ',');)
        parts.insert(p);
    } else
      die("unknown argument " + arg);
  }
  if (auto env = std::getenv("CAFMQ_DATABASE_URL"))
    admin_url = env;
  else
    die("set CAFMQ_DATABASE_URL (bench/run.sh does)");
  for (int rep = 0; rep < reps; ++rep, ++rep_number) {
    std::cerr << "repetition " << rep + 1 << " of " << reps << std::endl;
    if (parts.count("spawn"))
      bench_spawn();
    if (parts.count("drain")) {
      auto rates = drain(drain_kind::plain);
      report("drain, N-th handler start", "tasks/s", rates.started);
      report("drain, all outcomes written", "tasks/s", rates.written);
      report("drain: runner start to first handler", "ms",
             first_start_ms.back());
      report("drain: runner CPU per task", "us", rates.cpu_us);
    }
    if (parts.count("drain_remote")) {
      auto rates = drain(drain_kind::remote);
      report("drain, handlers on a remote worker node, N-th start", "tasks/s",
             rates.started);
      report("drain, handlers on a remote worker node, written", "tasks/s",
             rates.written);
    }
    if (parts.count("fan_in")) {
      auto rates = drain(drain_kind::fan_in);
      report("fan-in: N parents and their callback, callback start", "tasks/s",
             rates.started);
      report("fan-in: N parents and their callback, written", "tasks/s",
             rates.written);
    }
    if (parts.count("drain_watch"))
      report("drain, 100 tasks watched", "tasks/s",
             drain(drain_kind::watched).written);
    if (parts.count("drain_tx")) {
      auto rates = drain(drain_kind::transactional);
      report("drain, complete(tx) per task", "tasks/s", rates.written);
      report("drain, complete(tx): runner CPU per task", "us", rates.cpu_us);
    }
    if (parts.count("latency"))
      bench_latency(false);
    if (parts.count("latency_direct"))
      bench_latency(true);
    if (parts.count("scale")) {
      report("scale: drain 10,000 of 10,000 pending", "tasks/s",
             drain_at_depth(10000));
      report("scale: drain 10,000 of 1,000,000 pending", "tasks/s",
             drain_at_depth(1000000));
    }
    if (parts.count("channels"))
      bench_channels();
    if (parts.count("million"))
      bench_million();
    if (parts.count("held_baseline"))
      bench_held_snapshot(false);
    if (parts.count("held_snapshot"))
      bench_held_snapshot(true);
    if (parts.count("raw")) {
      report("raw SQL b2: DELETE..SKIP LOCKED, 1 txn/task, 4 clients",
             "tasks/s", raw_dequeue(false));
      report("raw SQL b3: lock 100 + delete 100, 2 txns/100, 4 clients",
             "tasks/s", raw_dequeue(true));
    }
  }
  std::cout << std::left << std::setw(58) << "measure" << std::right
            << std::setw(12) << "median" << std::setw(24) << "runs"
            << "  unit\n";
  for (auto& r : table) {
    std::ostringstream runs;
    for (size_t i = 0; i < r.values.size(); ++i)
      runs << (i ? " " : "") << std::fixed << std::setprecision(1)
           << r.values[i];
    std::cout << std::left << std::setw(58) << r.what << std::right
              << std::setw(12) << std::fixed << std::setprecision(1)
              << median(r.values) << std::setw(24) << runs.str() << "  "
              << r.unit << "\n";
  }
  return 0;
}
