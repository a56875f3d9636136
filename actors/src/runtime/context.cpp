// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/actors/detail/context.hpp"

namespace cafmq::actors {

runtime_context::runtime_context(runner_config x,
                                 std::shared_ptr<runtime_metrics> m)
  : cfg(std::move(x)), log(cfg.log, cfg.min_log_level),
    metrics(m ? std::move(m)
              : std::make_shared<runtime_metrics>(cfg.task_names())) {
  for (auto& def : cfg.actor_tasks)
    actor_tasks.emplace(def.name, &def);
}

const failure_filter&
runtime_context::filter_of(const std::string& name) const {
  if (auto def = actor_task(name); def != nullptr && def->is_failure)
    return def->is_failure;
  if (auto def = cfg.tasks ? cfg.tasks->find(name) : nullptr)
    if (def->is_failure)
      return def->is_failure;
  return cfg.is_failure;
}

const actor_task_definition*
runtime_context::actor_task(const std::string& name) const {
  auto i = actor_tasks.find(name);
  return i != actor_tasks.end() ? i->second : nullptr;
}

bool runtime_context::runs_here(const std::string& name) const {
  return actor_task(name) != nullptr
         || (cfg.tasks && cfg.tasks->find(name) != nullptr);
}

caf::timespan runtime_context::request_timeout() const {
  return cfg.request_timeout;
}

} // namespace cafmq::actors
