#include "cafmq/actors/runner.hpp"

#include <caf/all.hpp>
#include <unistd.h>

#include "cafmq/actors/database.hpp"
#include "cafmq/actors/dispatcher.hpp"
#include "cafmq/actors/messages.hpp"
#include "cafmq/error.hpp"
#include "cafmq/migrate.hpp"
#include "cafmq/queue_connection.hpp"

namespace cafmq::actors {

namespace {

std::string default_node() {
  char host[256] = "localhost";
  gethostname(host, sizeof(host) - 1);
  return std::string{host} + ":" + std::to_string(getpid());
}

caf::error check(runner_config& cfg) {
  if (cfg.database_url.empty())
    return make_error(errc::invalid_argument, "no database URL configured");
  if (!cfg.tasks)
    cfg.tasks = std::make_shared<registry>();
  if (cfg.task_names().empty())
    return make_error(errc::invalid_argument, "no task definitions given");
  for (auto& def : cfg.actor_tasks) {
    if (!def.spawn)
      return make_error(errc::invalid_argument,
                        "actor task " + def.name + " has no spawn function");
    if (cfg.tasks->find(def.name) != nullptr)
      return make_error(errc::invalid_name,
                        "task " + def.name + " is defined twice");
  }
  if (cfg.min_concurrency < 1 || cfg.max_concurrency < cfg.min_concurrency)
    return make_error(errc::invalid_argument,
                      "concurrency needs 1 <= min <= max, got min "
                        + std::to_string(cfg.min_concurrency) + " max "
                        + std::to_string(cfg.max_concurrency));
  if (cfg.prefetch < 0 || cfg.prefetch > 100000)
    return make_error(errc::invalid_argument,
                      "prefetch must be between 0 and 100000, got "
                        + std::to_string(cfg.prefetch));
  if (cfg.keep_alive_interval >= cfg.lease)
    return make_error(errc::invalid_argument,
                      "the keep-alive interval must be shorter than the lease");
  if (cfg.node.empty())
    cfg.node = default_node();
  return caf::none;
}

} // namespace

std::vector<std::string> runner_config::task_names() const {
  std::vector<std::string> result;
  if (tasks)
    result = tasks->names();
  for (auto& def : actor_tasks)
    result.push_back(def.name);
  return result;
}

caf::expected<caf::actor> spawn_runner(caf::actor_system& sys,
                                       runner_config cfg) {
  if (auto err = check(cfg))
    return err;
  // The start-up connection checks the schema and then claims: the first
  // claim does not wait for a connection of its own.
  auto conn = queue_connection::open(cfg.database_url);
  if (!conn)
    return std::move(conn.error());
  if (cfg.migrate) {
    auto migrated = migrate((*conn)->connection());
    if (!migrated)
      return std::move(migrated.error());
  }
  auto claim_db
    = sys.spawn<caf::detached>(database, cfg.database_url, std::move(*conn));
  auto write_db = sys.spawn<caf::detached>(database, cfg.database_url,
                                           std::shared_ptr<queue_connection>{});
  return spawn_dispatcher(sys, std::move(cfg), claim_db, write_db, true);
}

struct runner::impl {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  caf::actor dispatcher;
  bool stopped = false;
};

runner::runner(std::unique_ptr<impl> ptr) : impl_(std::move(ptr)) {
  // nop
}

runner::~runner() {
  stop();
}

caf::expected<std::unique_ptr<runner>> runner::start(runner_config cfg) {
  auto ptr = std::make_unique<impl>();
  // Work sharing wakes an idle scheduler thread with a condition variable.
  // CAF's default, work stealing, polls: an idle thread sleeps up to 10 ms
  // between polls, which a task's pickup latency would pay, and its 50 us
  // polling naps cost CPU that PostgreSQL needs under load.
  ptr->cfg.set("scheduler.policy", caf::atom("sharing"));
  ptr->sys = std::make_unique<caf::actor_system>(ptr->cfg);
  auto dispatcher = spawn_runner(*ptr->sys, std::move(cfg));
  if (!dispatcher)
    return std::move(dispatcher.error());
  ptr->dispatcher = std::move(*dispatcher);
  return std::unique_ptr<runner>{new runner(std::move(ptr))};
}

void runner::stop() {
  if (impl_->stopped)
    return;
  impl_->stopped = true;
  caf::scoped_actor self{*impl_->sys};
  self->request(impl_->dispatcher, caf::infinite, stop_atom::value)
    .receive([](bool) {}, [](caf::error&) {});
  impl_->dispatcher = nullptr;
}

runner_stats runner::stats() {
  runner_stats result;
  if (impl_->stopped)
    return result;
  caf::scoped_actor self{*impl_->sys};
  self->request(impl_->dispatcher, caf::infinite, stats_atom::value)
    .receive([&](const runner_stats& x) { result = x; }, [](caf::error&) {});
  return result;
}

} // namespace cafmq::actors
