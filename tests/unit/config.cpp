// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE config
#include <caf/test/unit_test.hpp>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cafmq/actors/config.hpp"
#include "cafmq/error.hpp"

using namespace cafmq::actors;

namespace config_impl {

// Every option of the [cafmq] groups that --help lists, as "group.name".
std::set<std::string> listed_options(const config& cfg) {
  std::set<std::string> result;
  std::istringstream in{cfg.help_text("test")};
  std::regex option{R"(^  --(cafmq[a-z.]*\.[a-z-]+)=)"};
  std::smatch m;
  for (std::string line; std::getline(in, line);)
    if (std::regex_search(line, m, option))
      result.insert(m[1]);
  return result;
}

// Parses `args` (after the program name) with the config file `ini`.
caf::expected<runner_config> load(config& cfg, std::vector<std::string> args,
                                  const std::string& ini) {
  std::vector<char*> argv{const_cast<char*>("test")};
  for (auto& arg : args)
    argv.push_back(arg.data());
  if (auto err
      = cfg.parse(static_cast<int>(argv.size()), argv.data(), ini.c_str()))
    return err;
  return cfg.runner(nullptr);
}

// The members of two runner_configs that options set, compared one by one.
void check_same(const runner_config& x, const runner_config& y) {
#define CAFMQ_SAME(member) CAF_CHECK_EQUAL(x.member, y.member)
#define CAFMQ_SAME_COUNT(member)                                               \
  CAF_CHECK_EQUAL(x.member.count(), y.member.count())
  CAFMQ_SAME(listen_url);
  CAFMQ_SAME(node);
  CAFMQ_SAME(channels);
  CAFMQ_SAME(min_concurrency);
  CAFMQ_SAME(max_concurrency);
  CAFMQ_SAME(prefetch);
  CAFMQ_SAME_COUNT(prefetch_window);
  CAFMQ_SAME(direct_dispatch);
  CAFMQ_SAME_COUNT(lease);
  CAFMQ_SAME_COUNT(keep_alive_interval);
  CAFMQ_SAME_COUNT(max_poll_wait);
  CAFMQ_SAME_COUNT(shutdown_timeout);
  CAFMQ_SAME(migrate);
  CAFMQ_SAME(worker_processes);
  CAFMQ_SAME(worker_process_capacity);
  CAFMQ_SAME(worker_command);
  CAFMQ_SAME_COUNT(retention);
  CAFMQ_SAME(prune_batch);
  CAFMQ_SAME_COUNT(maintenance_interval);
  CAFMQ_SAME_COUNT(compact_after_hold);
  CAFMQ_SAME(vacuum_dead_rows);
  CAFMQ_SAME_COUNT(schedule_interval);
  CAFMQ_SAME(channel_concurrency);
  CAFMQ_SAME_COUNT(channel_idle_timeout);
  CAFMQ_SAME_COUNT(request_timeout);
  CAFMQ_SAME_COUNT(handler_grace);
  CAFMQ_SAME(max_lost_attempts);
  CAFMQ_SAME_COUNT(takeover_interval);
  CAFMQ_SAME_COUNT(fallback_poll_interval);
  CAFMQ_SAME(max_watches);
  CAFMQ_SAME(max_restarts);
  CAFMQ_SAME_COUNT(restart_period);
  CAF_CHECK_EQUAL(to_string(x.on_database_loss), to_string(y.on_database_loss));
  CAFMQ_SAME_COUNT(start_timeout);
  CAF_CHECK_EQUAL(to_string(x.min_log_level), to_string(y.min_log_level));
  CAFMQ_SAME(publish.host);
  CAFMQ_SAME(publish.port);
  CAFMQ_SAME(publish.secret);
  CAFMQ_SAME(dashboard_listen);
  CAFMQ_SAME(dashboard_token);
  CAFMQ_SAME(dashboard_read_only);
  CAFMQ_SAME(metrics_listen);
  CAFMQ_SAME(metrics_queue_interval);
  CAF_CHECK_EQUAL(
    x.connection.statement_timeout.value_or(std::chrono::milliseconds{0})
      .count(),
    y.connection.statement_timeout.value_or(std::chrono::milliseconds{0})
      .count());
  CAF_CHECK_EQUAL(x.connection.idle_in_transaction_session_timeout
                    .value_or(std::chrono::milliseconds{0})
                    .count(),
                  y.connection.idle_in_transaction_session_timeout
                    .value_or(std::chrono::milliseconds{0})
                    .count());
  CAFMQ_SAME(connection.send_session_settings);
  CAFMQ_SAME(connection.prepare_statements);
  CAFMQ_SAME(connection.keepalives);
  CAFMQ_SAME_COUNT(connection.keepalives_idle);
  CAFMQ_SAME_COUNT(connection.keepalives_interval);
  CAFMQ_SAME(connection.keepalives_count);
  CAFMQ_SAME_COUNT(connection.tcp_user_timeout);
  CAFMQ_SAME_COUNT(connection.connect_timeout);
  CAFMQ_SAME(connection.application_name);
#undef CAFMQ_SAME
#undef CAFMQ_SAME_COUNT
}

struct fixture {};
} // namespace config_impl

using namespace config_impl;

CAF_TEST_FIXTURE_SCOPE(config_tests, config_impl::fixture)

CAF_TEST(without a config file the options take the defaults of runner_config) {
  config cfg;
  auto loaded = load(cfg, {}, "/nonexistent/cafmq.ini");
  CAF_REQUIRE(loaded);
  check_same(*loaded, config::defaults());
  check_same(*loaded, runner_config{});
}

CAF_TEST(the shipped config file lists every option with its default) {
  config cfg;
  auto loaded = load(cfg, {}, CAFMQ_SOURCE_DIR "/config/cafmq.ini");
  CAF_REQUIRE(loaded);
  check_same(*loaded, runner_config{});
  // Each option --help lists is in the file, in its group.
  std::ifstream in{CAFMQ_SOURCE_DIR "/config/cafmq.ini"};
  std::set<std::string> in_file;
  std::string group;
  for (std::string line; std::getline(in, line);) {
    if (line.size() > 2 && line.front() == '[')
      group = line.substr(1, line.find(']') - 1);
    else if (auto eq = line.find('=');
             eq != std::string::npos && line.front() != ';')
      in_file.insert(group + "." + line.substr(0, eq));
  }
  auto options = listed_options(cfg);
  CAF_CHECK_GREATER(options.size(), 40u);
  for (auto& name : options)
    if (in_file.count(name) == 0)
      CAF_FAIL("config/cafmq.ini lacks " << name);
  for (auto& name : in_file)
    if (options.count(name) == 0)
      CAF_FAIL("config/cafmq.ini sets " << name << ", which is no option");
}

CAF_TEST(the command line sets options that the config file does not ) {
  config cfg;
  auto loaded = load(
    cfg,
    {"--cafmq.prune-batch=7", "--cafmq.channel-idle-timeout=3s",
     "--cafmq.connect-timeout=4s", "--cafmq.keepalives=false",
     "--cafmq.migrate=false", "--cafmq.send-session-settings=false",
     "--cafmq.application-name=billing", "--cafmq.prepare-statements=false",
     "--cafmq.worker-command=[\"/bin/worker\", \"--x\"]"},
    CAFMQ_SOURCE_DIR "/config/cafmq.ini");
  CAF_REQUIRE(loaded);
  CAF_CHECK_EQUAL(loaded->prune_batch, 7);
  CAF_CHECK_EQUAL(loaded->channel_idle_timeout.count(), 3000);
  CAF_CHECK_EQUAL(loaded->connection.connect_timeout.count(), 4);
  CAF_CHECK_EQUAL(loaded->connection.keepalives, false);
  CAF_CHECK_EQUAL(loaded->migrate, false);
  CAF_CHECK_EQUAL(loaded->connection.send_session_settings, false);
  CAF_CHECK_EQUAL(loaded->connection.application_name, "billing");
  CAF_CHECK_EQUAL(loaded->connection.prepare_statements, false);
  CAF_CHECK_EQUAL(loaded->worker_command,
                  (std::vector<std::string>{"/bin/worker", "--x"}));
}

CAF_TEST(help lists the options of cafmq with their defaults) {
  config cfg;
  std::vector<std::string> args{"test", "--help"};
  std::vector<char*> argv{args[0].data(), args[1].data()};
  CAF_REQUIRE(!cfg.parse(2, argv.data(), "/nonexistent/cafmq.ini"));
  CAF_CHECK(cfg.cli_helptext_printed);
  auto text = cfg.help_text("test");
  CAF_CHECK_NOT_EQUAL(text.find("--cafmq.max-concurrency=<int32>"),
                      std::string::npos);
  CAF_CHECK_NOT_EQUAL(text.find("(default: 32)"), std::string::npos);
  CAF_CHECK_NOT_EQUAL(text.find("--cafmq.lease=<timespan>"), std::string::npos);
  CAF_CHECK_NOT_EQUAL(text.find("(default: 30s)"), std::string::npos);
  CAF_CHECK_NOT_EQUAL(text.find("--cafmq.publish.port="), std::string::npos);
}

CAF_TEST(an option with a value it cannot take is a clear error) {
  config cfg;
  auto loaded
    = load(cfg, {"--cafmq.on-database-loss=explode"}, "/nonexistent/cafmq.ini");
  CAF_REQUIRE(!loaded);
  CAF_CHECK_NOT_EQUAL(cafmq::render(loaded.error()).find("on-database-loss"),
                      std::string::npos);
}

CAF_TEST(docs / configuration.md lists every option with its default) {
  config cfg;
  std::ifstream in{CAFMQ_SOURCE_DIR "/docs/configuration.md"};
  std::stringstream buf;
  buf << in.rdbuf();
  auto readme = buf.str();
  std::istringstream help{cfg.help_text("test")};
  std::regex option{
    R"(^  --(cafmq[a-z.]*\.[a-z-]+)=<([^>]+)>.*\(default: (.*)\)$)"};
  std::smatch m;
  int rows = 0;
  for (std::string line; std::getline(help, line);) {
    if (!std::regex_search(line, m, option))
      continue;
    ++rows;
    auto row
      = "| `" + m[1].str() + "` | " + m[2].str() + " | `" + m[3].str() + "` |";
    if (readme.find(row) == std::string::npos)
      CAF_FAIL("docs/configuration.md lacks the row " << row);
  }
  CAF_CHECK_GREATER(rows, 40);
}

CAF_TEST_FIXTURE_SCOPE_END()
