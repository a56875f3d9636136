// SPDX-License-Identifier: BSD-3-Clause
#include "runtime/spawn_by_name.hpp"

#include <caf/send.hpp>

#include "cafmq/actors/detail/event_hub.hpp"
#include "cafmq/error.hpp"

namespace cafmq::actors {

namespace {

std::chrono::microseconds micros(caf::timespan x) {
  return std::chrono::duration_cast<std::chrono::microseconds>(x);
}

spawn_builder::clock::time_point wall(caf::timestamp x) {
  return std::chrono::time_point_cast<spawn_builder::clock::duration>(x);
}

} // namespace

caf::expected<named_spawn> resolve_spawn(const runtime_context& ctx,
                                         const spawn_request& req) {
  const task_options* defaults = nullptr;
  if (auto def = ctx.cfg.tasks ? ctx.cfg.tasks->find(req.name) : nullptr)
    defaults = &def->defaults;
  else if (auto actor_def = ctx.actor_task(req.name))
    defaults = &actor_def->defaults;
  else if (auto remote_def = ctx.cfg.remote_tasks
                               ? ctx.cfg.remote_tasks->find(req.name)
                               : nullptr)
    defaults = &remote_def->defaults;
  if (defaults == nullptr)
    return make_error(errc::unknown_handler,
                      "this runner has no task named \"" + req.name + "\"");
  named_spawn result{spawn_builder{req.name, *defaults}, defaults->channel_name,
                     defaults->channel_args};
  auto& b = result.builder;
  // Drawn here, not at spawn: the event hub hears of the id before the
  // write.
  b.id(req.id ? *req.id : uuid::time_ordered());
  if (req.channel_name) {
    b.channel_name(*req.channel_name);
    result.channel_name = *req.channel_name;
  }
  if (req.channel_args) {
    b.channel_args(*req.channel_args);
    result.channel_args = *req.channel_args;
  }
  if (req.delay)
    b.delay(micros(*req.delay));
  if (req.run_at)
    b.run_at(wall(*req.run_at));
  if (req.retries)
    b.retries(*req.retries);
  if (req.backoff)
    b.backoff(micros(*req.backoff));
  if (req.backoff_cap)
    b.backoff_cap(micros(*req.backoff_cap));
  if (req.ordered)
    b.ordered(*req.ordered);
  if (req.priority)
    b.priority(*req.priority);
  if (req.commit_interval)
    b.commit_interval(micros(*req.commit_interval));
  if (req.timeout)
    b.timeout(micros(*req.timeout));
  if (req.deadline)
    b.deadline(wall(*req.deadline));
  if (req.unique_key)
    b.unique_key(*req.unique_key);
  if (req.json)
    b.raw_json(*req.json);
  if (req.bytes)
    b.bytes(*req.bytes);
  if (!req.parents.empty())
    b.after(req.parents);
  if (req.on_parent_failure) {
    if (*req.on_parent_failure == to_string(parent_failure::run))
      b.on_parent_failure(parent_failure::run);
    else if (*req.on_parent_failure != to_string(parent_failure::cancel))
      return make_error(errc::invalid_argument,
                        "on_parent_failure must be cancel or run, not \""
                          + *req.on_parent_failure + "\"");
  }
  if (req.workflow)
    b.workflow(*req.workflow);
  if (auto err = b.validate())
    return err;
  return result;
}

caf::expected<std::vector<spawn_reply>> write_spawns(
  const runtime_context& ctx, const event_sink_actor& hub,
  const std::vector<named_spawn>& xs,
  const std::function<caf::expected<std::vector<spawn_reply>>()>& write) {
  if (!hub)
    return write();
  for (const auto& x : xs)
    caf::anon_send(hub, hold_atom::value, *x.builder.id());
  auto result = write();
  std::vector<task_event> events;
  for (size_t i = 0; i < xs.size(); ++i) {
    const auto& x = xs[i];
    if (!result || !(*result)[i].created) {
      caf::anon_send(hub, abandon_atom::value, *x.builder.id());
      continue;
    }
    claimed_task task;
    task.id = (*result)[i].id;
    task.name = x.builder.name();
    task.channel_name = x.channel_name;
    task.channel_args = x.channel_args;
    task.workflow_id = x.builder.workflow();
    events.push_back(make_event(task_event::spawned, task, ctx));
  }
  if (!events.empty())
    caf::anon_send(hub, event_atom::value, std::move(events));
  return result;
}

} // namespace cafmq::actors
