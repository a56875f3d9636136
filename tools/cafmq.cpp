// SPDX-License-Identifier: BSD-3-Clause
// cafmq: command-line tool for the queue's database.
//
//   cafmq [--database-url=URL] migrate        apply the migrations
//   cafmq --version                           library and schema version
//   cafmq [--database-url=URL] version        schema versions (db / binary)
//   cafmq [--database-url=URL] status ID      one task's state
//   cafmq [--database-url=URL] cancel ID      cancel a task
//   cafmq [--database-url=URL] watch ID       print every state change until
//                                             the task ends
//
// The URL defaults to CAFMQ_DATABASE_URL.
//
//   cafmq node COMMAND [ARG] --port=P [--host=H] [--secret=S] [TLS options]
//     stats | events [--channel=C|--task=T] [--for=D] | pause CHANNEL |
//     resume CHANNEL | spawn NAME [--json=J ...] | status ID | cancel ID |
//     watch ID | stop
//   talks to a runner node through its published control interface (no
//   database needed); the secret defaults to CAFMQ_NODE_SECRET; `cafmq node
//   --help` lists every option (node_command.cpp).
//
// Exit codes: 0 success, 1 error, 2 usage, 3 the node cannot be reached,
// did not answer in time or was lost, 4 the node refused the secret.

#include <cstdlib>
#include <iostream>
#include <optional>
#include <string_view>

#include <caf/actor_system_config.hpp>
#include <pqxx/pqxx>

#include "cafmq/client.hpp"
#include "cafmq/connection_options.hpp"
#include "cafmq/error.hpp"
#include "cafmq/migrate.hpp"
#include "cafmq/version.hpp"
#include "metrics_command.hpp"
#include "node_command.hpp"

namespace {

struct config : caf::actor_system_config {
  std::string database_url;

  config() {
    opt_group{custom_options_, "global"}.add(
      database_url, "database-url,u",
      "PostgreSQL URL (default: CAFMQ_DATABASE_URL)");
  }
};

int fail(const caf::error& err) {
  std::cerr << "cafmq: " << cafmq::render(err) << '\n';
  return 1;
}

int usage() {
  std::cerr << "usage: cafmq [--database-url=URL] migrate | version | "
               "status ID | cancel ID | watch ID\n"
               "       cafmq node COMMAND ... (cafmq node --help)\n";
  return 2;
}

std::string fmt_time(std::chrono::system_clock::time_point t) {
  auto secs = std::chrono::system_clock::to_time_t(t);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&secs));
  return buf;
}

void print_status(const std::string& id, const cafmq::task_status& st) {
  std::cout << "id=" << id << " name=" << st.name
            << " state=" << to_string(st.state) << " attempt=" << st.attempt
            << "/" << st.max_attempts << " created=" << fmt_time(st.created_at);
  if (st.finished_at)
    std::cout << " finished=" << fmt_time(*st.finished_at);
  if (st.last_error)
    std::cout << " last_error=\"" << *st.last_error << '"';
  std::cout << std::endl;
}

int run(pqxx::connection_base& conn, const std::string& url,
        const std::vector<std::string>& args) {
  const auto& cmd = args[0];
  std::optional<cafmq::uuid> id;
  if (args.size() == 2) {
    id = cafmq::uuid::parse(args[1]);
    if (!id)
      return fail(cafmq::make_error(cafmq::errc::invalid_argument,
                                    "not a task id: " + args[1]));
  }
  if (cmd == "migrate" && args.size() == 1) {
    auto version = cafmq::migrate(conn);
    if (!version)
      return fail(version.error());
    std::cout << "schema version " << *version << '\n';
    return 0;
  }
  if (cmd == "version" && args.size() == 1) {
    auto version = cafmq::schema_version(conn);
    if (!version)
      return fail(version.error());
    std::cout << "database " << *version << " binary "
              << cafmq::latest_schema_version() << '\n';
    return 0;
  }
  if (cmd == "status" && id) {
    auto st = cafmq::status(conn, *id);
    if (!st)
      return fail(st.error());
    print_status(args[1], *st);
    return 0;
  }
  if (cmd == "cancel" && id) {
    auto result = cafmq::cancel(conn, *id);
    if (!result)
      return fail(result.error());
    std::cout << "task=" << args[1] << " cancel=" << to_string(*result)
              << std::endl;
    return 0;
  }
  if (cmd == "watch" && id) {
    auto err = cafmq::watch(url, *id, [&](const cafmq::task_status& st) {
      print_status(args[1], st);
    });
    return err ? fail(err) : 0;
  }
  return usage();
}

} // namespace

int main(int argc, char** argv) {
  // The library (cafmq::version(), which a shared library may have moved
  // past the headers) and the schema version this binary migrates to.
  if (argc == 2 && std::string_view{argv[1]} == "--version") {
    std::cout << "cafmq " << cafmq::version() << " (schema "
              << cafmq::latest_schema_version() << ")\n";
    return 0;
  }
  if (argc >= 2 && std::string_view{argv[1]} == "node")
    return cafmq::cli::node_command(argc - 2, argv + 2);
  // TEMP until the CLI rewrite wires it: cafmq metrics --listen ADDR.
  if (argc == 4 && std::string_view{argv[1]} == "metrics"
      && std::string_view{argv[2]} == "--listen") {
    auto env = std::getenv("CAFMQ_DATABASE_URL");
    return cafmq::cli::run_metrics_server(env != nullptr ? env : "", argv[3]);
  }
  config cfg;
  if (auto err = cfg.parse(argc, argv)) {
    std::cerr << "cafmq: " << caf::to_string(err) << '\n';
    return usage();
  }
  if (cfg.cli_helptext_printed)
    return 0;
  if (cfg.remainder.empty())
    return usage();
  auto url = cfg.database_url;
  if (url.empty())
    if (auto env = std::getenv("CAFMQ_DATABASE_URL"))
      url = env;
  if (url.empty()) {
    std::cerr << "cafmq: no database: pass --database-url or set "
                 "CAFMQ_DATABASE_URL\n";
    return 2;
  }
  auto conn = cafmq::open_connection(url);
  if (!conn)
    return fail(conn.error());
  auto rc = cafmq::guarded(
    [&]() -> caf::expected<int> { return run(**conn, url, cfg.remainder); });
  return rc ? *rc : fail(rc.error());
}
