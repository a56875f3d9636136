// SPDX-License-Identifier: BSD-3-Clause
#include "metrics_command.hpp"

#include <csignal>
#include <iostream>
#include <memory>

#include <pqxx/pqxx>
#include <pthread.h>

#include "cafmq/actors/detail/metrics.hpp"
#include "cafmq/admin.hpp"
#include "cafmq/error.hpp"

namespace cafmq::cli {

namespace {

int fail(const std::string& what) {
  std::cerr << "cafmq metrics: " << what << '\n';
  return 1;
}

// Reads the views once, so that a wrong URL or an unmigrated database is
// an error now rather than an empty page later.
caf::error check_database(const std::string& url,
                          const connection_options& opts) {
  auto conn = open_connection(url, opts);
  if (!conn)
    return std::move(conn.error());
  auto stats = queue_stats(**conn, false);
  return stats ? caf::error{} : std::move(stats.error());
}

} // namespace

int run_metrics_server(const std::string& database_url,
                       const std::string& listen,
                       std::chrono::milliseconds interval) {
  using namespace cafmq::actors;
  if (database_url.empty())
    return fail("no database URL (--database-url or CAFMQ_DATABASE_URL)");
  connection_options opts;
  opts.application_name = "cafmq metrics";
  if (auto err = check_database(database_url, opts))
    return fail(render(err));
  // Blocked before the server's threads start, which inherit the mask:
  // sigwait below is the only taker.
  sigset_t signals;
  sigset_t old_mask;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, &old_mask);
  auto endpoint = metrics_endpoint::start(listen);
  if (!endpoint) {
    pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
    return fail(render(endpoint.error()));
  }
  auto log = std::make_shared<logger>();
  (*endpoint)->add(make_queue_gauges(database_url, opts, log, interval));
  (*log)(log_level::info, "serving metrics",
         {{"address", (*endpoint)->address()}, {"path", "/metrics"}});
  int sig = 0;
  sigwait(&signals, &sig);
  (*log)(log_level::info, "stopping", {{"signal", sig}});
  endpoint->reset();
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  return 0;
}

} // namespace cafmq::cli
