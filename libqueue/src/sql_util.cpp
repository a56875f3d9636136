// SPDX-License-Identifier: BSD-3-Clause
#include "sql_util.hpp"

#include <cmath>
#include <stdexcept>

#include <pqxx/pqxx>

#include "cafmq/error.hpp"

namespace cafmq::detail {

namespace {

void append_quoted(std::string& out, const std::string& x) {
  out += '"';
  for (char c : x) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  out += '"';
}

} // namespace

std::string text_array(const std::vector<std::string>& xs) {
  std::string result = "{";
  for (size_t i = 0; i < xs.size(); ++i) {
    if (i > 0)
      result += ',';
    append_quoted(result, xs[i]);
  }
  result += '}';
  return result;
}

std::string
optional_text_array(const std::vector<std::optional<std::string>>& xs) {
  std::string result = "{";
  for (size_t i = 0; i < xs.size(); ++i) {
    if (i > 0)
      result += ',';
    if (xs[i])
      append_quoted(result, *xs[i]);
    else
      result += "NULL";
  }
  result += '}';
  return result;
}

std::string uuid_array(const std::vector<uuid>& xs) {
  std::string result = "{";
  for (size_t i = 0; i < xs.size(); ++i) {
    if (i > 0)
      result += ',';
    result += to_string(xs[i]);
  }
  result += '}';
  return result;
}

std::string int_array(const std::vector<int>& xs) {
  std::string result = "{";
  for (size_t i = 0; i < xs.size(); ++i) {
    if (i > 0)
      result += ',';
    result += std::to_string(xs[i]);
  }
  result += '}';
  return result;
}

std::string bool_array(const std::vector<bool>& xs) {
  std::string result = "{";
  for (size_t i = 0; i < xs.size(); ++i) {
    if (i > 0)
      result += ',';
    result += xs[i] ? 't' : 'f';
  }
  result += '}';
  return result;
}

std::string base64(std::string_view bytes) {
  static constexpr char table[]
    = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string result;
  result.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    auto n = (static_cast<unsigned char>(bytes[i]) << 16)
             | (static_cast<unsigned char>(bytes[i + 1]) << 8)
             | static_cast<unsigned char>(bytes[i + 2]);
    result += table[(n >> 18) & 63];
    result += table[(n >> 12) & 63];
    result += table[(n >> 6) & 63];
    result += table[n & 63];
  }
  if (i < bytes.size()) {
    auto n = static_cast<unsigned char>(bytes[i]) << 16;
    if (i + 1 < bytes.size())
      n |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    result += table[(n >> 18) & 63];
    result += table[(n >> 12) & 63];
    result += i + 1 < bytes.size() ? table[(n >> 6) & 63] : '=';
    result += '=';
  }
  return result;
}

bool valid_utf8(std::string_view str) {
  size_t i = 0;
  while (i < str.size()) {
    auto c = static_cast<unsigned char>(str[i]);
    size_t len;
    std::uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > str.size())
      return false;
    for (size_t j = 1; j < len; ++j) {
      auto cc = static_cast<unsigned char>(str[i + j]);
      if ((cc & 0xC0) != 0x80)
        return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    // Reject overlong forms, surrogates and values past U+10FFFF.
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800)
        || (len == 4 && cp < 0x10000) || cp > 0x10FFFF
        || (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += len;
  }
  return true;
}

caf::error check_name(const char* what, std::string_view value,
                      std::size_t max_bytes, bool allow_empty) {
  std::string name = what;
  if (value.empty() && !allow_empty)
    return make_error(errc::invalid_name, name + " must not be empty");
  if (value.size() > max_bytes)
    return make_error(errc::invalid_name,
                      name + " has " + std::to_string(value.size())
                        + " bytes, at most " + std::to_string(max_bytes)
                        + " are allowed");
  if (value.find('\0') != std::string_view::npos)
    return make_error(errc::invalid_name, name + " contains a NUL byte");
  if (!valid_utf8(value))
    return make_error(errc::invalid_name, name + " is not valid UTF-8");
  return caf::none;
}

uuid to_uuid(const pqxx::field& f) {
  if (f.is_null())
    return uuid{};
  auto result = uuid::parse(f.c_str());
  if (!result)
    throw std::runtime_error("not a uuid: " + std::string{f.c_str()});
  return *result;
}

std::optional<std::chrono::microseconds> to_micros(const pqxx::field& f) {
  if (f.is_null())
    return std::nullopt;
  return std::chrono::microseconds{
    static_cast<std::int64_t>(std::llround(f.as<double>()))};
}

std::optional<std::chrono::system_clock::time_point>
to_time(const pqxx::field& f) {
  auto us = to_micros(f);
  if (!us)
    return std::nullopt;
  return std::chrono::system_clock::time_point{
    std::chrono::duration_cast<std::chrono::system_clock::duration>(*us)};
}

std::optional<std::string> to_bytes(const pqxx::field& f) {
  if (f.is_null())
    return std::nullopt;
  return pqxx::binarystring{f}.str();
}

task_status to_task_status(const pqxx::row& row) {
  task_status result;
  result.state = parse_task_state(row["state"].c_str()).value();
  result.name = row["name"].c_str();
  result.channel_name = row["channel_name"].c_str();
  result.channel_args = row["channel_args"].c_str();
  result.attempt = row["attempt"].as<int>();
  result.max_attempts = row["max_attempts"].as<int>();
  if (!row["last_error"].is_null())
    result.last_error = row["last_error"].as<std::string>();
  result.cancel_requested = row["cancel_requested"].as<bool>();
  if (!row["node"].is_null())
    result.node = row["node"].as<std::string>();
  result.created_at = to_time(row["created_us"]).value();
  result.run_at = to_time(row["run_at_us"]).value();
  result.started_at = to_time(row["started_us"]);
  result.finished_at = to_time(row["finished_us"]);
  result.priority = row["priority"].as<int>();
  if (!row["result"].is_null())
    result.result = row["result"].as<std::string>();
  return result;
}

} // namespace cafmq::detail
