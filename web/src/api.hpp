// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// The JSON side of the dashboard's API: query parameters into a
// `task_filter`, the admin functions' results into JSON, errors into HTTP
// status codes. No HTTP server here, so the unit tests reach all of it.

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>
#include <nlohmann/json.hpp>

#include "cafmq/admin.hpp"

namespace cafmq::web {

/// A listing request: which tasks, how many, from where.
struct list_request {
  task_filter filter;
  int limit = 50;
  std::optional<uuid> after;
};

/// Reads `state` (comma-separated), `name`, `channel`, `older_than`,
/// `newer_than`, `limit` (1..1000) and `after` (a task id); empty values
/// are unset. `errc::invalid_argument` names the parameter at fault.
caf::expected<list_request>
parse_list_request(const std::multimap<std::string, std::string>& params);

/// A task row of a listing.
nlohmann::json to_json(const task_row& x);

/// A task with its payload and options.
nlohmann::json to_json(const task_detail& x);

/// Counts grouped per channel: {"channel": ..., "states": {...}, ...}.
nlohmann::json to_json(const std::vector<queue_stat>& xs);

/// The HTTP status and JSON body of an error.
std::pair<int, nlohmann::json> error_response(const caf::error& err);

/// A 400 answer's body.
nlohmann::json bad_request(const std::string& message);

/// Serializes for a response; invalid UTF-8 in user data is replaced.
std::string dump(const nlohmann::json& x);

} // namespace cafmq::web
