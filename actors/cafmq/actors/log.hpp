// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// The runtime's log: a line is a sentence plus key=value fields, at a level.
// It goes to a sink the application can replace; the default writes one
// line per record to stderr, never to stdout:
//   cafmq level=warning msg="claim failed, retrying" backoff_ms=200 error="..."

#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cafmq::actors {

/// How much a record matters, least first.
enum class log_level { debug, info, warning, error };

/// Returns "debug", "info", "warning" or "error".
std::string to_string(log_level x);

/// One key=value field of a log record.
struct log_field {
  /// The field's name.
  std::string key;
  /// The value as text; `format` quotes it when needed.
  std::string value;

  /// A field with a text value.
  log_field(std::string k, std::string v);
  /// A field with a text value.
  log_field(std::string k, const char* v);
  /// A field with a number, written in decimal.
  log_field(std::string k, long long v);
  /// A field with a number.
  log_field(std::string k, int v) : log_field(std::move(k), (long long)v) {}
  /// A field with a number.
  log_field(std::string k, long v) : log_field(std::move(k), (long long)v) {}
  /// A field with a number; one above the largest `long long` shows negative.
  log_field(std::string k, unsigned long v)
    : log_field(std::move(k), (long long)v) {}
};

/// One log line before formatting.
struct log_record {
  /// How much it matters.
  log_level level = log_level::info;
  /// The sentence.
  std::string message;
  /// The key=value fields, in order.
  std::vector<log_field> fields;
};

/// Receives every record at or above the configured level. Called from
/// the runtime's actors, possibly from several threads at once.
using log_sink = std::function<void(const log_record&)>;

/// Formats a record as one line: `cafmq level=... msg="..." key=value...`.
/// Values with spaces, quotes or `=` are quoted and escaped.
std::string format(const log_record& x);

/// The default sink: formats each record on one line to stderr.
log_sink stderr_sink();

/// A sink with a level threshold, shared by the actors of one runtime.
class logger {
public:
  /// Passes records at or above `min` to `sink`; an empty sink means stderr.
  logger(log_sink sink = stderr_sink(), log_level min = log_level::info);

  /// Logs `message` with `fields` at `level`, unless the level is below the
  /// threshold.
  void operator()(log_level level, std::string_view message,
                  std::initializer_list<log_field> fields = {}) const;

  /// True when records at `level` are passed on; check it before building
  /// costly fields.
  bool enabled(log_level level) const noexcept {
    return level >= min_;
  }

private:
  log_sink sink_;
  log_level min_;
};

/// A logger shared by the actors of one runtime.
using logger_ptr = std::shared_ptr<const logger>;

} // namespace cafmq::actors
