// SPDX-License-Identifier: BSD-3-Clause
#include "config/runner_check.hpp"

#include "cafmq/actors/detail/metrics.hpp"
#include "cafmq/actors/node.hpp"
#include "cafmq/actors/runner.hpp"
#include "cafmq/error.hpp"
#include "cafmq/schedule.hpp"
#include "nodes/node_auth.hpp"

namespace cafmq::actors {

caf::error check_runner_config(runner_config& cfg) {
  auto invalid = [](std::string what) {
    return make_error(errc::invalid_argument, std::move(what));
  };
  if (cfg.database_url.empty())
    return invalid("no database URL configured");
  if (!cfg.tasks)
    cfg.tasks = std::make_shared<registry>();
  if (cfg.task_names().empty()
      && (!cfg.remote_tasks || cfg.remote_tasks->names().empty()))
    return invalid("no task definitions given (tasks, actor_tasks or "
                   "remote_tasks)");
  for (auto& name : cfg.tasks->names())
    if (!cfg.tasks->find(name)->handler)
      return invalid("task " + name
                     + " has no handler: a task declared by name alone runs "
                       "on worker nodes (runner_config::remote_tasks)");
  if (cfg.remote_tasks)
    for (auto& name : cfg.task_names())
      if (cfg.remote_tasks->find(name) != nullptr)
        return make_error(errc::invalid_name,
                          "task " + name
                            + " is defined twice (local and remote)");
  for (auto& def : cfg.actor_tasks) {
    if (!def.behavior)
      return invalid("actor task " + def.name + " has no behavior");
    if (cfg.tasks->find(def.name) != nullptr)
      return make_error(errc::invalid_name,
                        "task " + def.name + " is defined twice");
  }
  if (cfg.min_concurrency < 1 || cfg.max_concurrency < cfg.min_concurrency)
    return invalid("concurrency needs 1 <= min <= max, got min "
                   + std::to_string(cfg.min_concurrency) + " max "
                   + std::to_string(cfg.max_concurrency));
  if (cfg.prefetch < 0 || cfg.prefetch > 100000)
    return invalid("prefetch must be between 0 and 100000, got "
                   + std::to_string(cfg.prefetch));
  if (cfg.keep_alive_interval >= cfg.lease)
    return invalid("the keep-alive interval must be shorter than the lease");
  // A renewal that hangs is dropped by the watchdog after request_timeout;
  // the next one must still come before the lease runs out.
  if (cfg.request_timeout >= cfg.lease - cfg.keep_alive_interval)
    return invalid(
      "request-timeout (" + std::to_string(cfg.request_timeout.count())
      + " ms) must be shorter than lease (" + std::to_string(cfg.lease.count())
      + " ms) minus keep-alive-interval ("
      + std::to_string(cfg.keep_alive_interval.count())
      + " ms): a hung renewal is dropped only after "
        "request-timeout, and the next one must come before "
        "the lease runs out");
  if (cfg.start_timeout.count() < 0)
    return invalid("the start timeout must not be negative");
  if (cfg.request_timeout.count() <= 0 || cfg.handler_grace.count() < 0
      || cfg.shutdown_timeout.count() < 0)
    return invalid("request timeout must be positive, handler grace and "
                   "shutdown timeout not negative");
  if (cfg.worker_processes < 1 || cfg.worker_process_capacity < 1)
    return invalid("worker processes and their capacity must be at least 1, "
                   "got "
                   + std::to_string(cfg.worker_processes) + " and "
                   + std::to_string(cfg.worker_process_capacity));
  if (cfg.max_lost_attempts < 0 || cfg.max_restarts < 0 || cfg.max_watches < 0)
    return invalid("max lost attempts, max restarts and max watches must not "
                   "be negative");
  if (cfg.takeover_interval.count() < 0)
    return invalid("the takeover interval must not be negative (0: off)");
  if (cfg.schedule_interval.count() < 0)
    return invalid("the schedule interval must not be negative (0: off)");
  if (cfg.tasks)
    for (auto& name : cfg.tasks->names())
      if (auto def = cfg.tasks->find(name); def && def->schedule)
        if (auto err = validate(*def->schedule))
          return make_error(errc::invalid_argument,
                            "task " + name + ": " + render(err));
  if (cfg.fallback_poll_interval.count() <= 0)
    return invalid("the fallback poll interval must be positive");
  if (!cfg.metrics_listen.empty())
    if (auto address = metrics_bind_address(cfg.metrics_listen); !address)
      return std::move(address.error());
  if (cfg.node.empty())
    cfg.node = default_node_name();
  return caf::none;
}

std::vector<std::string> runner_config::task_names() const {
  std::vector<std::string> result;
  if (tasks)
    result = tasks->names();
  for (auto& def : actor_tasks)
    result.push_back(def.name);
  return result;
}

} // namespace cafmq::actors
