// SPDX-License-Identifier: BSD-3-Clause
// cafmq: the operator's command-line tool. `cafmq --help` lists the
// commands, `cafmq COMMAND --help` each one's options. The database comes
// from --database-url, else the `[cafmq]` group's `database-url` in the same
// config file the runtime reads (--config, else
// cafmq::actors::config::default_config_file()), else CAFMQ_DATABASE_URL.
// `cafmq node ...` talks to a published runner instead (node_command.cpp).

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string_view>

#include <CLI/CLI.hpp>

#include "cafmq/actors/config.hpp"
#include "cafmq/migrate.hpp"
#include "cafmq/version.hpp"
#include "cafmq/web/dashboard.hpp"
#include "commands.hpp"
#include "durations.hpp"
#include "metrics_command.hpp"
#include "node_command.hpp"
#include "scheduling_cli.hpp"
#include "workflow_commands.hpp"

namespace {

using namespace cafmq::cli;

constexpr auto exit_codes = R"(Exit codes:
  0  success
  1  error (database unreachable, a task that cannot be retried, ...)
  2  usage: unknown command, missing or bad argument
  3  node: the node cannot be reached, did not answer in time, or was lost
  4  node: the node refused the secret
  5  the database is not migrated to this binary's schema: run `cafmq migrate`
  6  no task with that id)";

// Reads the database URL and the retention from the runtime's config file.
int read_config(const std::string& file, bool explicit_file, context& ctx,
                const std::string& url_flag) {
  cafmq::actors::config cfg;
  if (!file.empty()) {
    if (!std::filesystem::exists(file)) {
      if (explicit_file) {
        std::cerr << "cafmq: no config file " << file << '\n';
        return exit_usage;
      }
    } else {
      char name[] = "cafmq";
      char* argv[] = {name, nullptr};
      if (auto err = cfg.parse(1, argv, file.c_str())) {
        std::cerr << "cafmq: " << file << ": " << caf::to_string(err) << '\n';
        return exit_usage;
      }
    }
  }
  ctx.retention
    = std::chrono::duration_cast<std::chrono::microseconds>(cfg.retention);
  ctx.url = url_flag;
  if (ctx.url.empty())
    ctx.url = cfg.database_url;
  if (ctx.url.empty())
    if (auto env = std::getenv("CAFMQ_DATABASE_URL"))
      ctx.url = env;
  if (ctx.url.empty()) {
    std::cerr << "cafmq: no database: pass --database-url, set "
                 "cafmq.database-url in "
              << (file.empty() ? std::string{"cafmq.ini"} : file)
              << " or set CAFMQ_DATABASE_URL\n";
    return exit_usage;
  }
  return exit_ok;
}

// Adds the filter options of list, retry and cancel.
void add_filter(CLI::App* cmd, filter_args& f, bool with_all) {
  cmd
    ->add_option("--state", f.states,
                 "only tasks in these states (repeat or comma-separate: "
                   + cafmq::task_state_names() + ")")
    ->delimiter(',');
  cmd->add_option("--name", f.name, "only tasks with this name");
  cmd->add_option("--channel", f.channel, "only tasks of this channel name");
  cmd->add_option("--older-than", f.older_than,
                  "only tasks created at least this long ago (30s, 5m, 2h, "
                  "7d)");
  cmd->add_option("--newer-than", f.newer_than,
                  "only tasks created at most this long ago");
  if (with_all)
    cmd->add_flag("--all", f.all, "every task (no other filter needed)");
}

} // namespace

int main(int argc, char** argv) {
  // `cafmq node ...` keeps its own parser (CAF's, for the TLS options).
  if (argc >= 2 && std::string_view{argv[1]} == "node")
    return node_command(argc - 2, argv + 2);
  CLI::App app{"cafmq: operate a cafmq queue in PostgreSQL", "cafmq"};
  app.footer(exit_codes);
  app.require_subcommand(1);
  app.fallthrough();
  std::string url_flag;
  std::string config_file;
  bool json = false;
  app.add_option("-u,--database-url", url_flag,
                 "PostgreSQL URL (default: cafmq.database-url in the config "
                 "file, then CAFMQ_DATABASE_URL)");
  app.add_option("-c,--config", config_file,
                 "the runtime's INI file, group [cafmq] (default: "
                 "$CAFMQ_CONFIG, next to the program, ../share/cafmq, the "
                 "working directory)");
  app.add_flag("--json", json, "print JSON (one document, or one per line)");
  app.add_flag_callback(
    "--version",
    [] {
      std::cout << "cafmq " << cafmq::version() << " (schema "
                << cafmq::latest_schema_version() << ")\n";
      throw CLI::Success{};
    },
    "print the library's version and the schema version it migrates to");

  // Arguments of the commands.
  bool status_only = false;
  std::string id;
  std::vector<std::string> ids;
  filter_args filter;
  int limit = 50;
  int bulk_limit = 100000;
  std::string after;
  bool live_only = false;
  std::string older_than;
  int batch = 10000;
  std::string interval = "1s";
  int iterations = 0;

  auto* migrate = app.add_subcommand(
    "migrate", "apply the pending migrations, showing each step");
  migrate->add_flag("--status", status_only,
                    "list the migrations, applied or pending; change nothing");
  auto* version
    = app.add_subcommand("version", "schema versions of the database and "
                                    "this binary");
  auto* status = app.add_subcommand("status", "one task's state");
  status->add_option("id", id, "the task's id")->required();
  auto* watch = app.add_subcommand(
    "watch", "print each state change of a task until it ends");
  watch->add_option("id", id, "the task's id")->required();
  auto* list = app.add_subcommand(
    "list", "list tasks, newest first, filtered, one page at a time");
  add_filter(list, filter, false);
  list->add_option("--limit", limit, "tasks per page (1 to 1000)")
    ->capture_default_str();
  list->add_option("--after", after,
                   "the page after this task id (printed "
                   "at the end of a page)");
  auto* stats = app.add_subcommand(
    "stats", "per channel and state: tasks, ready, oldest pending age, "
             "throughput over the last minute");
  stats->add_flag("--live", live_only,
                  "skip the totals of finished tasks (they cost a scan)");
  auto* retry = app.add_subcommand(
    "retry", "make failed or cancelled tasks pending again with a fresh "
             "attempt budget: by id, or every one a filter matches");
  retry->add_option("ids", ids, "task ids");
  add_filter(retry, filter, true);
  retry->add_option("--limit", bulk_limit, "at most this many by filter")
    ->capture_default_str();
  auto* cancel = app.add_subcommand(
    "cancel", "cancel tasks by id, or every live one a filter matches");
  cancel->add_option("ids", ids, "task ids");
  add_filter(cancel, filter, true);
  cancel->add_option("--limit", bulk_limit, "at most this many by filter")
    ->capture_default_str();
  auto* prune = app.add_subcommand(
    "prune", "delete finished tasks older than the retention");
  prune->add_option("--older-than", older_than,
                    "the retention (default: cafmq.retention from the config)");
  prune->add_option("--batch", batch, "rows per statement")
    ->capture_default_str();
  auto* compact = app.add_subcommand(
    "compact", "vacuum the live table and rebuild the indexes a held "
               "snapshot left mostly empty (what the runners' maintenance "
               "does after one)");
  std::string pause_channel;
  std::string pause_task;
  auto* pause = app.add_subcommand(
    "pause", "pause a channel name or a task name across the cluster (no "
             "runner claims its tasks; running ones finish); with neither, "
             "list the pauses");
  pause->add_option("--channel", pause_channel, "the channel name");
  pause->add_option("--task", pause_task, "the task name");
  auto* resume
    = app.add_subcommand("resume", "resume a paused channel name or task name");
  resume->add_option("--channel", pause_channel, "the channel name");
  resume->add_option("--task", pause_task, "the task name");
  auto scheduling = add_scheduling_commands(app);
  auto workflows = add_workflow_commands(app);
  auto* top = app.add_subcommand(
    "top", "a live view of the queue that refreshes in the terminal");
  top->add_option("--interval", interval, "time between refreshes")
    ->capture_default_str();
  top
    ->add_option("--iterations", iterations,
                 "stop after N refreshes (0: "
                 "until Ctrl-C)")
    ->capture_default_str();
  cafmq::web::dashboard_options web;
  auto* dashboard = app.add_subcommand(
    "dashboard", "serve the web dashboard until SIGINT or SIGTERM");
  dashboard
    ->add_option("--listen", web.listen,
                 "HOST:PORT to listen on (loopback by default; any other "
                 "address needs --token or --user)")
    ->capture_default_str();
  dashboard->add_option("--token", web.token,
                        "require this token (Authorization: Bearer, or "
                        "/?token= once for a session cookie)");
  dashboard->add_option("--user", web.user, "require basic auth: user");
  dashboard->add_option("--password", web.password,
                        "require basic auth: password");
  dashboard->add_flag("--read-only", web.read_only,
                      "show everything, change nothing");
  std::string chart_interval = "10s";
  dashboard
    ->add_option("--chart-interval", chart_interval,
                 "the charts sample the queue this often (each sample counts "
                 "the live tasks); 0s: no charts")
    ->capture_default_str();
  std::string metrics_listen;
  auto* metrics = app.add_subcommand(
    "metrics", "serve the queue-level Prometheus gauges (depth, ready, "
               "oldest pending age, last minute) until SIGINT or SIGTERM");
  metrics
    ->add_option("--listen", metrics_listen,
                 "PORT or :PORT (127.0.0.1), or HOST:PORT; port 0 takes a "
                 "free one")
    ->required();
  std::string metrics_interval = "10s";
  metrics
    ->add_option("--interval", metrics_interval,
                 "read the gauges at most this often (each read counts the "
                 "live tasks)")
    ->capture_default_str();
  app
    .add_subcommand("node", "talk to a published runner node (cafmq node "
                            "--help lists its commands)")
    ->prefix_command();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // An unknown word where a command belongs.
    if (app.get_subcommands().empty() && !app.remaining().empty()) {
      std::cerr << "cafmq: unknown command: " << app.remaining().front()
                << " (cafmq --help lists the commands)\n";
      return exit_usage;
    }
    auto rc = app.exit(e);
    return rc == 0 ? exit_ok : exit_usage;
  }
  auto* cmd = app.get_subcommands().front();
  if (cmd->get_name() == "node") {
    auto rest = cmd->remaining();
    std::vector<char*> args;
    for (auto& x : rest)
      args.push_back(x.data());
    return node_command(static_cast<int>(args.size()), args.data());
  }
  context ctx;
  ctx.json = json;
  auto file = config_file.empty() ? cafmq::actors::config::default_config_file()
                                  : config_file;
  if (auto rc = read_config(file, !config_file.empty(), ctx, url_flag))
    return rc;
  if (cmd == migrate)
    return migrate_command(ctx, status_only);
  if (cmd == version)
    return version_command(ctx);
  if (cmd == status)
    return status_command(ctx, id);
  if (cmd == watch)
    return watch_command(ctx, id);
  if (cmd == list)
    return list_command(ctx, filter, limit, after);
  if (cmd == stats)
    return stats_command(ctx, live_only);
  if (cmd == retry)
    return retry_command(ctx, ids, filter, bulk_limit);
  if (cmd == cancel)
    return cancel_command(ctx, ids, filter, bulk_limit);
  if (cmd == prune)
    return prune_command(ctx, older_than, batch);
  if (cmd == compact)
    return compact_command(ctx);
  if (cmd == pause || cmd == resume)
    return pause_command(ctx, cmd == pause, pause_channel, pause_task);
  if (scheduling.first.owns(cmd))
    return scheduling.second(ctx);
  if (cmd == workflows.first)
    return workflows.second(ctx);
  if (cmd == metrics) {
    auto interval = cafmq::parse_duration(metrics_interval);
    if (!interval) {
      std::cerr << "cafmq: --interval is not a duration: " << metrics_interval
                << '\n';
      return exit_usage;
    }
    return run_metrics_server(
      ctx.url, metrics_listen,
      std::chrono::duration_cast<std::chrono::milliseconds>(*interval));
  }
  if (cmd == dashboard) {
    if (web.user.empty() != web.password.empty()) {
      std::cerr << "cafmq: --user and --password go together\n";
      return exit_usage;
    }
    auto every = cafmq::parse_duration(chart_interval);
    if (!every) {
      std::cerr << "cafmq: --chart-interval is not a duration: "
                << chart_interval << '\n';
      return exit_usage;
    }
    web.chart_interval
      = std::chrono::duration_cast<std::chrono::milliseconds>(*every);
    return cafmq::web::run_dashboard(ctx.url, web);
  }
  if (cmd == top)
    return top_command(ctx, interval, iterations);
  return exit_usage;
}
