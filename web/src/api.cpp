// SPDX-License-Identifier: BSD-3-Clause
#include "api.hpp"

#include <cctype>
#include <ctime>

#include "cafmq/duration.hpp"
#include "cafmq/error.hpp"
#include "cafmq/status_json.hpp"

namespace cafmq::web {

namespace {

using json = nlohmann::json;

caf::error invalid(const std::string& what) {
  return make_error(errc::invalid_argument, what);
}

// Splits "a,b,,c" into its non-empty parts.
std::vector<std::string> split(const std::string& str) {
  std::vector<std::string> result;
  std::string::size_type pos = 0;
  while (pos <= str.size()) {
    auto end = str.find(',', pos);
    if (end == std::string::npos)
      end = str.size();
    if (end > pos)
      result.push_back(str.substr(pos, end - pos));
    pos = end + 1;
  }
  return result;
}

json optional_time(const std::optional<task_status::time_point>& x) {
  return x ? json(iso8601(*x)) : json(nullptr);
}

template <class T>
json optional_value(const std::optional<T>& x) {
  return x ? json(*x) : json(nullptr);
}

std::int64_t millis(std::chrono::microseconds x) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(x).count();
}

} // namespace

caf::expected<list_request>
parse_list_request(const std::multimap<std::string, std::string>& params) {
  list_request result;
  for (auto& [key, value] : params) {
    if (value.empty())
      continue;
    if (key == "state") {
      for (auto& name : split(value)) {
        auto state = parse_task_state(name);
        if (!state)
          return invalid("state: no task state is called '" + name + "' ("
                         + task_state_names() + ")");
        result.filter.states.push_back(*state);
      }
    } else if (key == "name") {
      result.filter.name = value;
    } else if (key == "channel") {
      result.filter.channel_name = value;
    } else if (key == "older_than" || key == "newer_than") {
      auto age = parse_duration(value);
      if (!age)
        return invalid(key + ": not an age such as 90s, 15min, 2h or 7d: '"
                       + value + "'");
      (key == "older_than" ? result.filter.older_than
                           : result.filter.newer_than)
        = *age;
    } else if (key == "limit") {
      auto ok = value.size() <= 4
                && value.find_first_not_of("0123456789") == std::string::npos;
      auto n = ok ? std::stoi(value) : 0;
      if (n < 1 || n > 1000)
        return invalid("limit: not a number from 1 to 1000: '" + value + "'");
      result.limit = n;
    } else if (key == "after") {
      auto id = uuid::parse(value);
      if (!id)
        return invalid("after: not a task id: '" + value + "'");
      result.after = *id;
    } else if (key != "token") {
      return invalid("unknown parameter '" + key + "'");
    }
  }
  return result;
}

json to_json(const task_row& x) {
  return status_json(x.id, x.status);
}

json to_json(const task_detail& x) {
  auto result = status_json(x.id, x.status);
  result["payload_json"] = optional_value(x.payload_json);
  result["payload_bytes"] = optional_value(x.payload_bytes);
  result["ordered"] = x.ordered;
  result["unique_key"] = optional_value(x.unique_key);
  result["timeout_ms"] = x.timeout ? json(millis(*x.timeout)) : json(nullptr);
  result["deadline"] = optional_time(x.deadline);
  result["backoff_ms"] = millis(x.backoff);
  result["backoff_cap_ms"] = millis(x.backoff_cap);
  result["lost_attempts"] = x.lost_attempts;
  result["attempts"] = attempts_json(x.attempts);
  result["workflow_id"]
    = x.workflow_id ? json(to_string(*x.workflow_id)) : json(nullptr);
  return result;
}

json to_json(const std::vector<queue_stat>& xs) {
  // One entry per channel, in the order the views give them.
  json channels = json::array();
  std::map<std::string, std::size_t> index;
  for (auto& x : xs) {
    auto [i, added] = index.emplace(x.channel_name, channels.size());
    if (added)
      channels.push_back(json{{"channel", x.channel_name},
                              {"states", json::object()},
                              {"ready", 0},
                              {"oldest_pending_ms", nullptr},
                              {"last_minute", json::object()}});
    auto& entry = channels[i->second];
    auto state = to_string(x.state);
    entry["states"][state] = x.tasks;
    if (x.state == task_state::pending) {
      entry["ready"] = x.ready;
      if (x.oldest_pending_age)
        entry["oldest_pending_ms"] = millis(*x.oldest_pending_age);
    }
    if (is_final(x.state))
      entry["last_minute"][state] = x.last_minute;
  }
  return channels;
}

std::pair<int, json> error_response(const caf::error& err) {
  auto code = code_of(err);
  int status = 500;
  switch (code) {
    case errc::invalid_argument:
    case errc::invalid_name:
      status = 400;
      break;
    case errc::unknown_task:
      status = 404;
      break;
    case errc::task_finished:
    case errc::stale_attempt:
    case errc::conflict:
      status = 409;
      break;
    case errc::database_unavailable:
    case errc::schema_too_old:
    case errc::schema_too_new:
    case errc::schema_mismatch:
      status = 503;
      break;
    default:
      break;
  }
  auto name = code == errc::none ? std::string{"error"} : to_string(code);
  return {status, json{{"error", name}, {"message", render(err)}}};
}

json bad_request(const std::string& message) {
  return json{{"error", "bad_request"}, {"message", message}};
}

std::string dump(const json& x) {
  return x.dump(-1, ' ', false, json::error_handler_t::replace);
}

} // namespace cafmq::web
