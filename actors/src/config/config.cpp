// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/actors/config.hpp"

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

#include <caf/config_option.hpp>
#include <caf/config_value.hpp>
#include <caf/settings.hpp>

#include "cafmq/error.hpp"

namespace cafmq::actors {

std::string to_string(database_loss_policy x) {
  return x == database_loss_policy::shutdown ? "shutdown" : "reconnect";
}

namespace {

// Renders a default the way the INI file writes it.
std::string render_default(caf::timespan x) {
  using namespace std::chrono;
  auto ns = x.count();
  if (ns == 0)
    return "0s";
  if (ns % duration_cast<nanoseconds>(hours{1}).count() == 0)
    return std::to_string(duration_cast<hours>(x).count()) + "h";
  if (ns % duration_cast<nanoseconds>(minutes{1}).count() == 0)
    return std::to_string(duration_cast<minutes>(x).count()) + "min";
  if (ns % duration_cast<nanoseconds>(seconds{1}).count() == 0)
    return std::to_string(duration_cast<seconds>(x).count()) + "s";
  if (ns % duration_cast<nanoseconds>(milliseconds{1}).count() == 0)
    return std::to_string(duration_cast<milliseconds>(x).count()) + "ms";
  return std::to_string(ns) + "ns";
}

std::string render_default(int x) {
  return std::to_string(x);
}

std::string render_default(bool x) {
  return x ? "true" : "false";
}

std::string render_default(const std::string& x) {
  return '"' + x + '"';
}

std::string render_default(const std::vector<std::string>& xs) {
  std::string result = "[";
  for (auto& x : xs) {
    if (result.size() > 1)
      result += ", ";
    result += render_default(x);
  }
  return result + "]";
}

// An option's description with its default, for --help.
template <class T>
std::string with_default(caf::string_view description, const T& value) {
  std::string result{description.begin(), description.end()};
  return result + " (default: " + render_default(value) + ")";
}

} // namespace

const runner_config& config::defaults() {
  static const runner_config instance;
  return instance;
}

config::config() {
  cafmq::actors::add_message_types(*this);
  opt_group{custom_options_, "cafmq"}
    .add(
      database_url, "database-url",
      with_default("PostgreSQL URL; empty: CAFMQ_DATABASE_URL", database_url))
    .add(listen_url, "listen-url",
         with_default("PostgreSQL URL of the listening connection; empty: "
                      "database-url (behind a pooler in transaction mode: "
                      "a direct one)",
                      listen_url))
    .add(node, "node",
         with_default("runner name in task rows; empty: host:pid", node))
    .add(channels, "channels",
         with_default("channel names to serve; empty: all", channels))
    .add(min_concurrency, "min-concurrency",
         with_default("claim below this many running", min_concurrency))
    .add(max_concurrency, "max-concurrency",
         with_default("at most this many running", max_concurrency))
    .add(
      prefetch, "prefetch",
      with_default("claimed attempts held beyond max-concurrency (claim ahead)",
                   prefetch))
    .add(prefetch_window, "prefetch-window",
         with_default(
           "hold ahead what the runner finishes in this long (0: prefetch)",
           prefetch_window))
    .add(direct_dispatch, "direct-dispatch",
         with_default("a spawn through the runtime while a handler is free "
                      "claims its task in its own transaction",
                      direct_dispatch))
    .add(lease, "lease", with_default("lease of each attempt", lease))
    .add(keep_alive_interval, "keep-alive-interval",
         with_default("how often leases are renewed", keep_alive_interval))
    .add(max_poll_wait, "max-poll-wait",
         with_default("longest sleep between claims", max_poll_wait))
    .add(shutdown_timeout, "shutdown-timeout",
         with_default("bound of a whole graceful stop, handler grace included",
                      shutdown_timeout))
    .add(migrate, "migrate", with_default("apply migrations at start", migrate))
    .add(retention, "retention",
         with_default("finished tasks are kept at least this long; a "
                      "day of the history goes once all of it is older",
                      retention))
    .add(
      maintenance_interval, "maintenance-interval",
      with_default("how often finished tasks are pruned", maintenance_interval))
    .add(compact_after_hold, "compact-after-hold",
         with_default("after a snapshot held longer than this ends, the live "
                      "table is vacuumed and its emptied indexes rebuilt "
                      "(0: never)",
                      compact_after_hold))
    .add(vacuum_dead_rows, "vacuum-dead-rows",
         with_default("each second, the live table is vacuumed if it has "
                      "this many dead row versions and vacuum can remove "
                      "some (0: leave it to autovacuum)",
                      vacuum_dead_rows))
    .add(schedule_interval, "schedule-interval",
         with_default("how often due schedules are fired (0: never here)",
                      schedule_interval))
    .add(channel_concurrency, "channel-concurrency",
         with_default("at most this many running per channel (0: no limit)",
                      channel_concurrency))
    .add(prune_batch, "prune-batch",
         with_default("rows of the default history partition "
                      "pruned per statement",
                      prune_batch))
    .add(channel_idle_timeout, "channel-idle-timeout",
         with_default("an idle channel actor retires after this long",
                      channel_idle_timeout))
    .add(
      request_timeout, "request-timeout",
      with_default("bound of every request and database call (a longer call's "
                   "connection is dropped and rebuilt)",
                   request_timeout))
    .add(statement_timeout, "statement-timeout",
         with_default("server-side bound of every statement (0: none)",
                      statement_timeout))
    .add(idle_in_transaction_timeout, "idle-in-transaction-timeout",
         with_default("server-side bound of an idle transaction (0: none)",
                      idle_in_transaction_timeout))
    .add(keepalives, "keepalives",
         with_default("TCP keepalives on every connection", keepalives))
    .add(tcp_user_timeout, "tcp-user-timeout",
         with_default(
           "TCP: unacknowledged data for this long drops the connection (0: "
           "the kernel's)",
           tcp_user_timeout))
    .add(connect_timeout, "connect-timeout",
         with_default("bound of each connection attempt", connect_timeout))
    .add(application_name, "application-name",
         with_default("application_name of every connection (pg_stat_activity)",
                      application_name))
    .add(send_session_settings, "send-session-settings",
         with_default(
           "send the two timeouts in the startup packet (false: SET after "
           "connecting, for PgBouncer)",
           send_session_settings))
    .add(prepare_statements, "prepare-statements",
         with_default("prepare the per-task statements once per connection "
                      "(off by itself behind PgBouncer; false: behind a "
                      "transaction pooler that accepts `options`)",
                      prepare_statements))
    .add(keepalives_idle, "keepalives-idle",
         with_default("TCP keepalive: idle time before the first probe",
                      keepalives_idle))
    .add(
      keepalives_interval, "keepalives-interval",
      with_default("TCP keepalive: time between probes", keepalives_interval))
    .add(keepalives_count, "keepalives-count",
         with_default("TCP keepalive: probes before the connection is dead",
                      keepalives_count))
    .add(handler_grace, "handler-grace",
         with_default(
           "a handler actor ignoring its cancel is killed after this long",
           handler_grace))
    .add(max_lost_attempts, "max-lost-attempts",
         with_default(
           "a task whose attempts were lost this many times in a row fails "
           "(0: no limit)",
           max_lost_attempts))
    .add(takeover_interval, "takeover-interval",
         with_default(
           "how often dead runners' tasks are looked for and handed back "
           "(0: never)",
           takeover_interval))
    .add(
      fallback_poll_interval, "fallback-poll-interval",
      with_default("claim at least this often when notifications do not arrive",
                   fallback_poll_interval))
    .add(max_watches, "max-watches",
         with_default("watches served at once; more are refused", max_watches))
    .add(worker_processes, "worker-processes",
         with_default("worker processes started for the isolated tasks",
                      worker_processes))
    .add(worker_process_capacity, "worker-process-capacity",
         with_default("attempts each worker process runs at once",
                      worker_process_capacity))
    .add(worker_command, "worker-command",
         with_default("program and arguments of a worker process; empty: this "
                      "program again",
                      worker_command))
    .add(max_restarts, "max-restarts",
         with_default(
           "restarts of the runtime's actors allowed within restart-period",
           max_restarts))
    .add(restart_period, "restart-period",
         with_default("window of max-restarts", restart_period))
    .add(on_database_loss, "on-database-loss",
         with_default("reconnect (default) or shutdown", on_database_loss))
    .add(start_timeout, "start-timeout",
         with_default(
           "how long a start waits for an unreachable database (reconnect)",
           start_timeout))
    .add(log_level_name, "log-level",
         with_default("debug, info, warning or error", log_level_name))
    .add(dashboard_listen, "dashboard-listen",
         with_default("HOST:PORT of the web dashboard this runner serves; "
                      "empty: none",
                      dashboard_listen))
    .add(dashboard_token, "dashboard-token",
         with_default("token the dashboard asks for (required off loopback)",
                      dashboard_token))
    .add(dashboard_read_only, "dashboard-read-only",
         with_default("the dashboard refuses cancel and retry",
                      dashboard_read_only))
    .add(metrics_listen, "metrics-listen",
         with_default("serve Prometheus metrics on PORT or :PORT (127.0.0.1) "
                      "or HOST:PORT; empty: off",
                      metrics_listen))
    .add(metrics_queue_interval, "metrics-queue-interval",
         with_default("the queue-level gauges are read at most this often, "
                      "and the dashboard's charts sample the queue this "
                      "often (each read counts the live tasks)",
                      metrics_queue_interval));
  opt_group{custom_options_, "cafmq.publish"}
    .add(node_host, "host",
         with_default("address to publish the control interface on", node_host))
    .add(
      node_port, "port",
      with_default("port to publish on (-1: not published, 0: any free port)",
                   node_port))
    .add(node_secret, "secret",
         with_default("shared secret a peer must prove (required without TLS)",
                      node_secret));
}

caf::error config::parse(int argc, char** argv, const char* ini_file) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg{argv[i]};
    if (arg == "-h" || arg == "-?" || arg == "--help") {
      std::cout << help_text(argc > 0 ? argv[0] : "PROGRAM");
      cli_helptext_printed = true;
      return caf::none;
    }
  }
  // CAF 0.17 takes a boolean on the command line only as a bare flag
  // (--cafmq.migrate sets it true). --NAME=true|false is taken here, after
  // the file, so that the command line can turn one off as well.
  std::vector<char*> args;
  std::vector<std::pair<const caf::config_option*, bool>> flags;
  for (int i = 0; i < argc; ++i) {
    std::string_view arg{argv[i]};
    auto eq = arg.find('=');
    if (i > 0 && arg.substr(0, 2) == "--" && eq != std::string_view::npos) {
      auto name = arg.substr(2, eq - 2);
      auto value = arg.substr(eq + 1);
      auto opt = custom_options_.qualified_name_lookup(
        caf::string_view{name.data(), name.size()});
      if (opt != nullptr && opt->is_flag()
          && (value == "true" || value == "false")) {
        flags.emplace_back(opt, value == "true");
        continue;
      }
    }
    args.push_back(argv[i]);
  }
  auto file
    = ini_file != nullptr ? std::string{ini_file} : default_config_file();
  if (auto err = caf::actor_system_config::parse(static_cast<int>(args.size()),
                                                 args.data(), file.c_str()))
    return err;
  for (auto& [opt, value] : flags) {
    opt->store(caf::config_value{value});
    caf::put(content, opt->full_name(), value);
  }
  return caf::none;
}

std::string config::help_text(const std::string& program) const {
  std::ostringstream out;
  out << "usage: " << program << " [--OPTION=VALUE ...]\n\n"
      << "Options are read from the config file (INI groups [cafmq] and\n"
      << "[cafmq.publish]; default " << default_config_file() << ")\n"
      << "and from the command line, which wins. TLS files of a published\n"
      << "node are CAF's openssl.* options. --long-help lists CAF's own.\n";
  out << "\n"
      << "  -h, --help                             print this text and exit\n"
      << "  --long-help                            print CAF's options too "
         "(to stderr) and exit\n"
      << "  --config-file=<string>                 read this config file\n"
      << "  --dump-config                          print the configuration "
         "and exit\n";
  for (auto group : {"cafmq", "cafmq.publish"}) {
    out << '\n' << group << " options:\n";
    for (auto& opt : custom_options_) {
      std::string category{opt.category().begin(), opt.category().end()};
      if (category != group)
        continue;
      std::string flag = "  --";
      flag += category + ".";
      flag += std::string{opt.long_name().begin(), opt.long_name().end()};
      auto type = opt.type_name();
      flag += "=<" + std::string{type.begin(), type.end()} + ">";
      out << flag;
      if (flag.size() < 40)
        out << std::string(40 - flag.size(), ' ');
      out << ' ' << opt.description() << '\n';
    }
  }
  return out.str();
}

std::string config::default_config_file() {
  if (auto env = std::getenv("CAFMQ_CONFIG"); env != nullptr && *env != 0)
    return env;
  namespace fs = std::filesystem;
  std::error_code ec;
  auto exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    auto dir = exe.parent_path();
    // Next to the program in the build tree; share/cafmq when installed.
    for (auto candidate :
         {dir / "cafmq.ini", dir / ".." / "share" / "cafmq" / "cafmq.ini"})
      if (fs::is_regular_file(candidate, ec))
        return candidate.lexically_normal().string();
  }
  return "cafmq.ini";
}

} // namespace cafmq::actors
