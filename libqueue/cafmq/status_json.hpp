// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// A task's status as JSON: the one shape that `cafmq status`, `cafmq list`
// and `cafmq watch` print with --json and the dashboard's API serves; and a
// workflow's tasks, as `cafmq workflow show --json` prints them and the
// dashboard's graph reads them.

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cafmq/admin.hpp"
#include "cafmq/task_status.hpp"
#include "cafmq/uuid.hpp"

namespace cafmq {

/// A time as ISO 8601 UTC with milliseconds, e.g.
/// "2026-12-01T06:25:31.486Z".
std::string iso8601(std::chrono::system_clock::time_point x);

/// The status of task `id`: id, state, name, channel_name, channel_args,
/// attempt, max_attempts, last_error, cancel_requested, node, created_at,
/// run_at, started_at, finished_at (times by `iso8601`), priority and
/// result (the stored JSON), in that order; what is unset is null.
nlohmann::ordered_json status_json(const uuid& id, const task_status& x);

/// A task's attempts (task_detail::attempts) as an array of objects:
/// attempt, started_at, ended_at, outcome, error, node, worker, retry_at;
/// what is unset is null. The one shape of `cafmq status --json` and the
/// dashboard's task detail.
nlohmann::ordered_json attempts_json(const std::vector<attempt_record>& xs);

/// Workflow `id` and its tasks (workflow_tasks): {"workflow": id, "tasks":
/// [{id, name, state, parents (ids), on_parent_failure ("cancel", "run", or
/// null without parents), result (the stored JSON), error}]}.
nlohmann::ordered_json workflow_json(const uuid& id,
                                     const std::vector<workflow_task>& xs);

/// What a bulk cancel did: {"cancelled": n, "requested": n}.
nlohmann::ordered_json cancel_counts_json(const cancel_counts& x);

} // namespace cafmq
