// SPDX-License-Identifier: BSD-3-Clause
#pragma once

#include <bitset>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>

#include <caf/error.hpp>
#include <caf/expected.hpp>

namespace cafmq {

/// Wall-clock fields of a local time (no time zone): what a cron expression
/// matches. Dates are proleptic Gregorian.
struct local_time {
  /// The year, 1..9999 when parsed.
  int year = 1970;
  /// 1..12.
  int month = 1;
  /// 1..31, at most the month's length.
  int day = 1;
  /// 0..23.
  int hour = 0;
  /// 0..59.
  int minute = 0;
  /// 0..59.
  int second = 0;

  /// Parses "YYYY-MM-DD HH:MM:SS" with an optional fraction ".f..." that is
  /// dropped: PostgreSQL's text output of a `timestamp`, e.g.
  /// "2026-12-02 05:13:07.123456". Fails with `errc::invalid_argument` on
  /// other text or fields out of range ("2026-02-29", "24:00:00").
  static caf::expected<local_time> parse(std::string_view str);

  /// Returns "YYYY-MM-DD HH:MM:SS", which PostgreSQL reads as a `timestamp`.
  std::string to_string() const;

  /// The fields, largest first.
  auto tie() const noexcept {
    return std::tie(year, month, day, hour, minute, second);
  }

  /// Compares all fields.
  friend bool operator==(const local_time& x, const local_time& y) noexcept {
    return x.tie() == y.tie();
  }

  /// Compares all fields.
  friend bool operator!=(const local_time& x, const local_time& y) noexcept {
    return x.tie() != y.tie();
  }

  /// Orders by time.
  friend bool operator<(const local_time& x, const local_time& y) noexcept {
    return x.tie() < y.tie();
  }
};

/// A parsed cron expression: which wall-clock times it fires at. Time zones
/// and DST are the caller's business (convert with PostgreSQL).
class cron_expression {
public:
  /// Parses 5 fields (minute hour day-of-month month day-of-week) or 6 fields
  /// (second first), separated by blanks. Each field is a comma list of `*`,
  /// `N`, `A-B`, `*/S`, `A-B/S` or `N/S` (from N to the field's maximum, step
  /// S). Months take the names jan..dec, days of the week sun..sat (three
  /// letters, any case), also in ranges (`mon-fri`); day of week 0 and 7 are
  /// both Sunday. The macros `@yearly`, `@annually`, `@monthly`, `@weekly`,
  /// `@daily`, `@midnight` and `@hourly` stand for their 5-field forms;
  /// `@every` and `@reboot`
  /// are not supported. If both day fields are restricted (neither starts
  /// with `*`), a day matches when either matches, else when both do (the
  /// Vixie cron rule). Fails with `errc::invalid_argument` and a context
  /// like `cron: value 60 out of range 0-59 in minute field of "60 * * * *"`.
  static caf::expected<cron_expression> parse(std::string_view text);

  /// Returns the first matching time strictly after `t` (a valid time), or
  /// `std::nullopt` if none falls in `t`'s year or the 8 years after it
  /// (e.g. "0 0 30 2 *"). Without a seconds field, matches are at second 0.
  std::optional<local_time> next_after(const local_time& t) const;

  /// The expression as given, without leading and trailing blanks.
  const std::string& text() const noexcept {
    return text_;
  }

  /// True for the 6-field form with a seconds field.
  bool has_seconds() const noexcept {
    return has_seconds_;
  }

private:
  cron_expression() = default;

  bool day_matches(int year, int month, int day) const;

  std::string text_;
  bool has_seconds_ = false;
  /// The day-of-month or day-of-week field starts with `*`.
  bool any_day_of_month_ = false;
  bool any_weekday_ = false;
  std::bitset<60> seconds_;
  std::bitset<60> minutes_;
  std::bitset<24> hours_;
  /// Bits 1..31.
  std::bitset<32> days_;
  /// Bits 1..12.
  std::bitset<13> months_;
  /// Bits 0..6, Sunday is 0 (a 7 in the text sets bit 0).
  std::bitset<8> weekdays_;
};

} // namespace cafmq
