// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/status_json.hpp"

#include <cstdio>
#include <ctime>
#include <optional>

namespace cafmq {

namespace {

using json = nlohmann::ordered_json;

json optional_time(const std::optional<task_status::time_point>& x) {
  return x ? json(iso8601(*x)) : json(nullptr);
}

template <class T>
json optional_value(const std::optional<T>& x) {
  return x ? json(*x) : json(nullptr);
}

} // namespace

std::string iso8601(std::chrono::system_clock::time_point x) {
  using namespace std::chrono;
  auto ms = duration_cast<milliseconds>(x.time_since_epoch()).count();
  auto secs = static_cast<std::time_t>(ms / 1000);
  auto frac = ms % 1000;
  if (frac < 0) {
    frac += 1000;
    --secs;
  }
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  auto n = std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof(buf) - n, ".%03dZ", static_cast<int>(frac));
  return buf;
}

json status_json(const uuid& id, const task_status& x) {
  return json{{"id", to_string(id)},
              {"state", to_string(x.state)},
              {"name", x.name},
              {"channel_name", x.channel_name},
              {"channel_args", x.channel_args},
              {"attempt", x.attempt},
              {"max_attempts", x.max_attempts},
              {"last_error", optional_value(x.last_error)},
              {"cancel_requested", x.cancel_requested},
              {"node", optional_value(x.node)},
              {"created_at", iso8601(x.created_at)},
              {"run_at", iso8601(x.run_at)},
              {"started_at", optional_time(x.started_at)},
              {"finished_at", optional_time(x.finished_at)},
              {"priority", x.priority},
              {"result", x.result ? json::parse(*x.result) : json(nullptr)}};
}

json attempts_json(const std::vector<attempt_record>& xs) {
  auto result = json::array();
  for (const auto& x : xs)
    result.push_back(json{{"attempt", x.attempt},
                          {"started_at", iso8601(x.started_at)},
                          {"ended_at", optional_time(x.ended_at)},
                          {"outcome", x.outcome},
                          {"error", optional_value(x.error)},
                          {"node", optional_value(x.node)},
                          {"worker", optional_value(x.worker)},
                          {"retry_at", optional_time(x.retry_at)}});
  return result;
}

json cancel_counts_json(const cancel_counts& x) {
  return json{{"cancelled", x.cancelled}, {"requested", x.requested}};
}

json workflow_json(const uuid& id, const std::vector<workflow_task>& xs) {
  auto tasks = json::array();
  for (const auto& x : xs) {
    auto parents = json::array();
    for (const auto& p : x.parents)
      parents.push_back(to_string(p));
    tasks.push_back(
      json{{"id", to_string(x.id)},
           {"name", x.name},
           {"state", to_string(x.state)},
           {"parents", std::move(parents)},
           {"on_parent_failure",
            x.parents.empty() ? json(nullptr)
                              : json(x.runs_after_failure ? "run" : "cancel")},
           {"result", x.result ? json::parse(*x.result) : json(nullptr)},
           {"error", optional_value(x.error)}});
  }
  return json{{"workflow", to_string(id)}, {"tasks", std::move(tasks)}};
}

} // namespace cafmq
