// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/actors/runner.hpp"

#include <mutex>
#include <optional>
#include <thread>

#include <caf/all.hpp>
#include <pqxx/pqxx>
#include <unistd.h>

#include "cafmq/actors/detail/database.hpp"
#include "cafmq/actors/detail/supervisor.hpp"
#include "cafmq/actors/isolation.hpp"
#include "cafmq/actors/node.hpp"
#include "cafmq/detail/queue_connection.hpp"
#include "cafmq/error.hpp"
#include "cafmq/migrate.hpp"
#include "cafmq/sql.hpp"
#include "cafmq/web/dashboard.hpp"
#include "config/runner_check.hpp"
#include "config/scheduler.hpp"
#include "embedding/stop_signals.hpp"
#include "isolation/worker_processes.hpp"
#include "nodes/node_auth.hpp"
#include "observability/serve_metrics.hpp"
#include "runtime/started_attempts.hpp"

namespace cafmq::actors {

namespace {

// The first connection. A database that cannot be reached yet is tried
// again with a backoff, each try logged, for up to cfg.start_timeout, under
// the reconnect policy; once under the shutdown policy.
caf::expected<std::shared_ptr<queue_connection>>
open_at_start(const runner_config& cfg) {
  logger log{cfg.log ? cfg.log : stderr_sink(), cfg.min_log_level};
  auto opts = connection_for(cfg, "claim");
  auto until = std::chrono::steady_clock::now() + cfg.start_timeout;
  auto backoff = std::chrono::milliseconds{100};
  for (int attempt = 1;; ++attempt) {
    auto conn = queue_connection::open(cfg.database_url, opts);
    if (conn || code_of(conn.error()) != errc::database_unavailable
        || cfg.on_database_loss != database_loss_policy::reconnect)
      return conn;
    auto now = std::chrono::steady_clock::now();
    if (now + backoff > until) {
      log(log_level::error, "database not reachable at start, giving up",
          {{"attempts", attempt},
           {"start_timeout_ms", cfg.start_timeout.count()},
           {"error", render(conn.error())}});
      return conn;
    }
    log(log_level::warning, "database not reachable at start, trying again",
        {{"attempt", attempt},
         {"after_ms", backoff.count()},
         {"error", render(conn.error())}});
    std::this_thread::sleep_for(backoff);
    backoff = std::min(2 * backoff, std::chrono::milliseconds{5000});
  }
}

// Before the first claim: the tasks an earlier runner of this node name
// left running go back to the queue now (see cafmq.hand_back_leftovers).
void hand_back_leftovers(pqxx::connection_base& conn,
                         const runner_config& cfg) {
  logger log{cfg.log ? cfg.log : stderr_sink(), cfg.min_log_level};
  try {
    pqxx::nontransaction tx{conn};
    auto n = tx.exec_params1(sql::hand_back_leftovers, cfg.node)[0].as<int>();
    if (n > 0)
      log(log_level::info,
          "handed back the tasks an earlier runner of this node name left",
          {{"node", cfg.node}, {"tasks", n}});
    else if (n < 0)
      log(log_level::warning,
          "another live runner uses this node name: takeover of this "
          "runner's tasks waits until it is gone",
          {{"node", cfg.node}});
  } catch (const std::exception& e) {
    log(log_level::warning, "cannot hand back an earlier runner's tasks",
        {{"error", e.what()}});
  }
}

// The dashboard of cfg.dashboard_listen, started; it stops when `runtime`
// ends (or earlier, by its owner). Its occupancy chart counts `started`
// against cfg.max_concurrency.
caf::expected<std::shared_ptr<web::dashboard>>
start_dashboard(const runner_config& cfg, const runtime_actor& runtime,
                const logger& log, std::shared_ptr<started_attempts> started) {
  web::dashboard_options opts;
  opts.listen = cfg.dashboard_listen;
  opts.token = cfg.dashboard_token;
  opts.read_only = cfg.dashboard_read_only;
  // The charts read the queue as often as the metrics' queue gauges may.
  opts.chart_interval = cfg.metrics_queue_interval;
  opts.occupancy = [started, slots = cfg.max_concurrency] {
    return std::optional<web::handler_occupancy>{web::handler_occupancy{
      static_cast<std::int64_t>(started->size()), slots}};
  };
  auto board = std::make_shared<web::dashboard>(
    cfg.database_url, std::move(opts), connection_for(cfg, "dashboard"));
  if (auto err = board->start())
    return err;
  log(log_level::info, "serving the dashboard",
      {{"listen", cfg.dashboard_listen},
       {"port", static_cast<int>(board->port())},
       {"read_only", cfg.dashboard_read_only ? "true" : "false"}});
  caf::actor_cast<caf::abstract_actor*>(runtime)->attach_functor(
    [board](const caf::error&) { board->stop(); });
  return board;
}

// spawn_runner, the port the node was published on (if it was) and the
// dashboard (if one is configured).
caf::expected<runtime_actor>
start_runtime(caf::actor_system& sys, runner_config cfg,
              std::optional<std::uint16_t>& port,
              std::shared_ptr<web::dashboard>& board,
              std::function<void(const runner_stats&)> on_stopped = nullptr,
              std::shared_ptr<started_attempts> started = nullptr) {
  if (is_worker_process())
    return make_error(errc::invalid_argument,
                      "this process is a worker process of another runner "
                      "(CAFMQ_WORKER_PROCESS is set): call "
                      "serve_worker_process(cfg) at the top of main");
  split_isolated(cfg);
  if (auto err = check_runner_config(cfg))
    return err;
  if (auto err = check_node_options(sys, cfg.publish))
    return err;
  // Worker processes join through a gate of their own: loopback, any port,
  // a secret fresh for each runner.
  node_options gate;
  bool isolation = !isolated_tasks(cfg)->empty();
  if (isolation) {
    gate.port = 0;
    gate.secret = make_nonce();
    if (auto err = check_node_options(sys, gate))
      return err;
  }
  // The start-up connection checks the schema and then claims: the first
  // claim does not wait for a connection of its own.
  auto conn = open_at_start(cfg);
  if (!conn)
    return std::move(conn.error());
  if (startup_options_refused(cfg.database_url))
    logger{cfg.log, cfg.min_log_level}(
      log_level::warning,
      "the server refused the startup parameter `options` (PgBouncer "
      "without ignore_startup_parameters = options): cafmq connects without "
      "it, so statement_timeout and idle_in_transaction_session_timeout are "
      "the server's; set them on the role (ALTER ROLE ... SET), or with "
      "session pooling set send-session-settings=false");
  // Either way, a database whose applied migrations differ from this
  // binary's is refused.
  if (cfg.migrate) {
    auto migrated = migrate((*conn)->connection());
    if (!migrated)
      return std::move(migrated.error());
  } else if (auto err = check_schema((*conn)->connection())) {
    return err;
  }
  if (cfg.takeover_interval.count() > 0)
    hand_back_leftovers((*conn)->connection(), cfg);
  // Bound before the runtime starts: an address in use fails the start.
  std::unique_ptr<metrics_endpoint> endpoint;
  std::shared_ptr<runtime_metrics> metrics;
  if (!cfg.metrics_listen.empty()) {
    auto bound = metrics_endpoint::start(cfg.metrics_listen);
    if (!bound)
      return std::move(bound.error());
    endpoint = std::move(*bound);
    auto names = cfg.task_names();
    if (cfg.remote_tasks)
      for (auto& name : cfg.remote_tasks->names())
        names.push_back(name);
    metrics = std::make_shared<runtime_metrics>(names);
  }
  // The running gauge and the dashboard's occupancy chart count them.
  if (!started && (endpoint || !cfg.dashboard_listen.empty()))
    started = std::make_shared<started_attempts>();
  runtime_parts parts;
  parts.startup = std::move(*conn);
  parts.on_stopped = std::move(on_stopped);
  parts.started = started;
  parts.metrics = metrics;
  auto publish = cfg.publish;
  logger log{cfg.log, cfg.min_log_level};
  auto processes = isolation ? std::optional<runner_config>{cfg} : std::nullopt;
  auto dashboard = cfg.dashboard_listen.empty()
                     ? std::nullopt
                     : std::optional<runner_config>{cfg};
  auto metrics_cfg
    = endpoint ? std::optional<runner_config>{cfg} : std::nullopt;
  auto runtime = spawn_runtime(sys, std::move(cfg), std::move(parts));
  if (endpoint)
    serve_metrics(sys, runtime, std::move(endpoint), *metrics, started,
                  *metrics_cfg);
  if (processes) {
    auto bound = publish_node(sys, runtime, gate, log);
    if (!bound) {
      caf::anon_send_exit(runtime, caf::exit_reason::user_shutdown);
      return std::move(bound.error());
    }
    start_worker_processes(sys, runtime, *processes, *bound, gate.secret);
  }
  if (publish.enabled()) {
    auto bound = publish_node(sys, runtime, publish, log);
    if (!bound) {
      caf::anon_send_exit(runtime, caf::exit_reason::user_shutdown);
      return std::move(bound.error());
    }
    port = *bound;
  }
  if (dashboard) {
    auto served = start_dashboard(*dashboard, runtime, log, started);
    if (!served) {
      caf::anon_send_exit(runtime, caf::exit_reason::user_shutdown);
      return std::move(served.error());
    }
    board = std::move(*served);
  }
  return runtime;
}

} // namespace

caf::expected<runtime_actor> spawn_runner(caf::actor_system& sys,
                                          runner_config cfg) {
  std::optional<std::uint16_t> port;
  std::shared_ptr<web::dashboard> board;
  return start_runtime(sys, std::move(cfg), port, board);
}

struct runner::impl {
  std::unique_ptr<caf::actor_system_config> cfg
    = std::make_unique<caf::actor_system_config>();
  std::unique_ptr<caf::actor_system> sys;
  runtime_actor runtime;
  // How long stop() waits at most.
  caf::timespan stop_bound;
  caf::timespan request_timeout;
  runner_stats last_stats;
  // The counters as the runtime's graceful stop left them.
  struct final_stats {
    std::mutex mtx;
    std::optional<runner_stats> value;
  };
  std::shared_ptr<final_stats> final = std::make_shared<final_stats>();
  bool stopped = false;
  std::optional<std::uint16_t> port;
  // Stopped by stop() once the handlers are done, so that no scheduler
  // thread of the runtime waits for the dashboard's threads.
  std::shared_ptr<web::dashboard> board;
};

runner::runner(std::unique_ptr<impl> ptr) : impl_(std::move(ptr)) {
  // nop
}

runner::~runner() {
  stop();
}

caf::expected<std::unique_ptr<runner>> runner::start(runner_config cfg) {
  auto ptr = std::make_unique<impl>();
  add_message_types(*ptr->cfg);
  configure_scheduler(*ptr->cfg);
  split_isolated(cfg);
  if (cfg.publish.enabled() || !isolated_tasks(cfg)->empty())
    enable_nodes(*ptr->cfg, cfg.publish.tls);
  ptr->sys = std::make_unique<caf::actor_system>(*ptr->cfg);
  // A safety net: the runtime answers within the shutdown timeout and the
  // read of its final counters.
  ptr->stop_bound = cfg.shutdown_timeout + 2 * cfg.request_timeout;
  ptr->request_timeout = cfg.request_timeout;
  auto runtime = start_runtime(*ptr->sys, std::move(cfg), ptr->port, ptr->board,
                               [final = ptr->final](const runner_stats& x) {
                                 std::lock_guard<std::mutex> guard{final->mtx};
                                 final->value = x;
                               });
  if (!runtime)
    return std::move(runtime.error());
  ptr->runtime = std::move(*runtime);
  return std::unique_ptr<runner>{new runner(std::move(ptr))};
}

void runner::stop() {
  if (impl_->stopped)
    return;
  stats();
  impl_->stopped = true;
  caf::scoped_actor self{*impl_->sys};
  self->request(impl_->runtime, impl_->stop_bound, stop_atom::value)
    .receive([](bool) {}, [](caf::error&) {});
  if (impl_->board)
    impl_->board->stop();
  caf::anon_send_exit(impl_->runtime, caf::exit_reason::user_shutdown);
}

runner_stats runner::stats() {
  {
    std::lock_guard<std::mutex> guard{impl_->final->mtx};
    if (impl_->final->value)
      return *impl_->final->value;
  }
  if (impl_->stopped)
    return impl_->last_stats;
  caf::scoped_actor self{*impl_->sys};
  self->request(impl_->runtime, impl_->request_timeout, stats_atom::value)
    .receive([&](const runner_stats& x) { impl_->last_stats = x; },
             [](caf::error&) {});
  return impl_->last_stats;
}

runtime_actor runner::handle() const {
  return impl_->runtime;
}

std::optional<std::uint16_t> runner::node_port() const {
  return impl_->port;
}

void runner::wait() {
  caf::scoped_actor self{*impl_->sys};
  self->monitor(impl_->runtime);
  self->receive([](const caf::down_msg&) {});
  impl_->stopped = true;
}

caf::expected<int> runner::wait_for_signal() {
  int sig = 0;
  {
    stop_signals signals;
    if (auto err = signals.install())
      return err;
    caf::scoped_actor self{*impl_->sys};
    self->monitor(impl_->runtime);
    // A thread of its own turns the pipe into a message, so one receive
    // waits for either a signal or the runtime's end.
    std::thread reader{[&signals, me = caf::actor_cast<caf::actor>(self)] {
      caf::anon_send(me, signals.next());
    }};
    bool ended = false;
    self->receive([&](int x) { sig = x; },
                  [&](const caf::down_msg&) { ended = true; });
    if (ended)
      signals.wake();
    reader.join();
    if (ended) {
      impl_->stopped = true;
      return 0;
    }
  }
  stop();
  return sig;
}

} // namespace cafmq::actors
