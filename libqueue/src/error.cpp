// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/error.hpp"

#include <string>

#include <caf/make_message.hpp>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

namespace cafmq {

std::string to_string(errc x) {
  switch (x) {
    case errc::none:
      return "none";
    case errc::invalid_argument:
      return "invalid_argument";
    case errc::invalid_name:
      return "invalid_name";
    case errc::invalid_json:
      return "invalid_json";
    case errc::payload_too_large:
      return "payload_too_large";
    case errc::payload_mismatch:
      return "payload_mismatch";
    case errc::duplicate_id:
      return "duplicate_id";
    case errc::unknown_task:
      return "unknown_task";
    case errc::task_finished:
      return "task_finished";
    case errc::stale_attempt:
      return "stale_attempt";
    case errc::reservation_expired:
      return "reservation_expired";
    case errc::database_unavailable:
      return "database_unavailable";
    case errc::conflict:
      return "conflict";
    case errc::database:
      return "database";
    case errc::schema_too_new:
      return "schema_too_new";
    case errc::migration_failed:
      return "migration_failed";
    case errc::handler_failed:
      return "handler_failed";
    case errc::unknown_handler:
      return "unknown_handler";
    case errc::schema_mismatch:
      return "schema_mismatch";
    case errc::schema_too_old:
      return "schema_too_old";
    case errc::access_denied:
      return "access_denied";
    case errc::node_unreachable:
      return "node_unreachable";
    case errc::limit_reached:
      return "limit_reached";
    case errc::runtime_stopped:
      return "runtime_stopped";
  }
  return "errc(" + std::to_string(static_cast<int>(x)) + ")";
}

caf::error make_error(errc x) {
  return caf::error{static_cast<std::uint8_t>(x), error_category};
}

caf::error make_error(errc x, std::string context) {
  return caf::error{static_cast<std::uint8_t>(x), error_category,
                    caf::make_message(std::move(context))};
}

errc code_of(const caf::error& x) {
  if (!x || x.category() != error_category)
    return errc::none;
  return static_cast<errc>(x.code());
}

std::string render(const caf::error& x) {
  if (!x)
    return "none";
  if (x.category() != error_category)
    return caf::to_string(x);
  std::string result = "cafmq::" + to_string(static_cast<errc>(x.code()));
  auto& ctx = x.context();
  if (ctx.size() == 1 && ctx.match_element<std::string>(0)) {
    result += ": ";
    result += ctx.get_as<std::string>(0);
  }
  return result;
}

namespace {

bool mentions(const std::string& what, const char* needle) {
  return what.find(needle) != std::string::npos;
}

// The server's primary message: the first line of libpqxx's text, without
// "ERROR:  " and without the DETAIL, HINT and CONTEXT lines (for an error
// inside a function, CONTEXT repeats the whole statement).
std::string primary_message(const std::string& what) {
  auto line = what.substr(0, what.find('\n'));
  for (const char* prefix : {"ERROR:  ", "FATAL:  "})
    if (line.rfind(prefix, 0) == 0)
      return line.substr(std::char_traits<char>::length(prefix));
  return line;
}

// The value in a DETAIL line "Key (col)=(value) already exists.", if any.
std::string key_value(const std::string& what) {
  auto start = what.find(")=(");
  if (start == std::string::npos)
    return {};
  start += 3;
  auto end = what.find(") already exists", start);
  return end == std::string::npos ? std::string{}
                                  : what.substr(start, end - start);
}

} // namespace

caf::error from_exception(const std::exception& e) {
  std::string what = e.what();
  while (!what.empty() && (what.back() == '\n' || what.back() == ' '))
    what.pop_back();
  if (dynamic_cast<const pqxx::broken_connection*>(&e) != nullptr)
    return make_error(errc::database_unavailable, what);
  if (auto sql = dynamic_cast<const pqxx::sql_error*>(&e)) {
    const auto& state = sql->sqlstate();
    auto line = primary_message(what);
    if (state == "22P02" && mentions(what, "json"))
      return make_error(errc::invalid_json, line);
    if (state == "22P05" || state == "22032")
      return make_error(errc::invalid_json, line);
    if (state == "23505" && mentions(what, "_pkey")) {
      auto id = key_value(what);
      return make_error(errc::duplicate_id,
                        id.empty() ? line : "task " + id + " already exists");
    }
    if (state == "23514" || state == "22021" || state == "22023")
      return make_error(errc::invalid_argument, line);
    if (state == "40001" || state == "40P01")
      return make_error(errc::conflict, line);
    if (state.rfind("08", 0) == 0 || state == "57P01")
      return make_error(errc::database_unavailable, line);
    return make_error(errc::database, line);
  }
  if (dynamic_cast<const nlohmann::json::exception*>(&e) != nullptr)
    return make_error(errc::payload_mismatch, what);
  if (dynamic_cast<const pqxx::failure*>(&e) != nullptr)
    return make_error(errc::database, what);
  return make_error(errc::handler_failed, what);
}

} // namespace cafmq
