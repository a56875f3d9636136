// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/actors/log.hpp"

#include <cstdio>
#include <mutex>

namespace cafmq::actors {

std::string to_string(log_level x) {
  switch (x) {
    case log_level::debug:
      return "debug";
    case log_level::info:
      return "info";
    case log_level::warning:
      return "warning";
    case log_level::error:
      return "error";
  }
  return "unknown";
}

log_field::log_field(std::string k, std::string v)
  : key(std::move(k)), value(std::move(v)) {
  // nop
}

log_field::log_field(std::string k, const char* v)
  : key(std::move(k)), value(v) {
  // nop
}

log_field::log_field(std::string k, long long v)
  : key(std::move(k)), value(std::to_string(v)) {
  // nop
}

namespace {

void append_value(std::string& out, const std::string& x) {
  auto plain = !x.empty() && x.find_first_of(" \"=\\\n\t") == std::string::npos;
  if (plain) {
    out += x;
    return;
  }
  out += '"';
  for (auto c : x) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += c;
    }
  }
  out += '"';
}

} // namespace

std::string format(const log_record& x) {
  std::string out = "cafmq level=";
  out += to_string(x.level);
  out += " msg=";
  append_value(out, x.message);
  for (auto& field : x.fields) {
    out += ' ';
    out += field.key;
    out += '=';
    append_value(out, field.value);
  }
  return out;
}

log_sink stderr_sink() {
  return [](const log_record& x) {
    auto line = format(x);
    line += '\n';
    // One write per line: lines of concurrent actors do not interleave.
    static std::mutex mtx;
    std::lock_guard<std::mutex> guard{mtx};
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fflush(stderr);
  };
}

logger::logger(log_sink sink, log_level min)
  : sink_(sink ? std::move(sink) : stderr_sink()), min_(min) {
  // nop
}

void logger::operator()(log_level level, std::string_view message,
                        std::initializer_list<log_field> fields) const {
  if (!enabled(level))
    return;
  log_record record;
  record.level = level;
  record.message = std::string{message};
  record.fields.assign(fields.begin(), fields.end());
  sink_(record);
}

} // namespace cafmq::actors
