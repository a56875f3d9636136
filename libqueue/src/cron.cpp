// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/cron.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <utility>
#include <vector>

#include "cafmq/error.hpp"

namespace cafmq {

// A named namespace inside the anonymous one: the unity build puts this file
// next to others with helpers of their own.
namespace {
namespace cron_detail {

bool is_leap(int year) {
  return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
}

int days_in_month(int year, int month) {
  static constexpr int days[]
    = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (month == 2 && is_leap(year))
    return 29;
  return days[month - 1];
}

// 0 is Sunday (Sakamoto's method, valid for years >= 1).
int weekday(int year, int month, int day) {
  static constexpr int offsets[] = {0, 3, 2, 5, 0, 3, 5, 1, 4, 6, 2, 4};
  if (month < 3)
    --year;
  return (year + year / 4 - year / 100 + year / 400 + offsets[month - 1] + day)
         % 7;
}

// The first set bit at or after `from`, -1 if none.
template <size_t N>
int next_set(const std::bitset<N>& bits, int from) {
  for (auto i = std::max(from, 0); i < static_cast<int>(N); ++i)
    if (bits[static_cast<size_t>(i)])
      return i;
  return -1;
}

bool is_blank(char c) {
  return c == ' ' || c == '\t';
}

std::string_view trim(std::string_view str) {
  while (!str.empty() && is_blank(str.front()))
    str.remove_prefix(1);
  while (!str.empty() && is_blank(str.back()))
    str.remove_suffix(1);
  return str;
}

std::vector<std::string_view> split(std::string_view str, char sep) {
  std::vector<std::string_view> result;
  for (;;) {
    auto pos = str.find(sep);
    result.push_back(str.substr(0, pos));
    if (pos == std::string_view::npos)
      return result;
    str.remove_prefix(pos + 1);
  }
}

std::vector<std::string_view> split_blanks(std::string_view str) {
  std::vector<std::string_view> result;
  size_t i = 0;
  while (i < str.size()) {
    if (is_blank(str[i])) {
      ++i;
      continue;
    }
    auto j = i;
    while (j < str.size() && !is_blank(str[j]))
      ++j;
    result.push_back(str.substr(i, j - i));
    i = j;
  }
  return result;
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

bool is_alpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// True if `str` is not empty and `pred` holds for each character.
bool all_of(std::string_view str, bool (*pred)(char)) {
  if (str.empty())
    return false;
  for (auto c : str)
    if (!pred(c))
      return false;
  return true;
}

std::string lowercase(std::string_view str) {
  std::string result{str};
  for (auto& c : result)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return result;
}

constexpr std::array<const char*, 12> month_names
  = {"jan", "feb", "mar", "apr", "may", "jun",
     "jul", "aug", "sep", "oct", "nov", "dec"};

constexpr std::array<const char*, 7> weekday_names
  = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};

// What one field of an expression accepts.
struct field_spec {
  const char* name;
  int min;
  int max;
  // Names for min, min + 1, ...; none if empty.
  const char* const* names = nullptr;
  size_t names_size = 0;
};

constexpr field_spec second_field{"second", 0, 59};
constexpr field_spec minute_field{"minute", 0, 59};
constexpr field_spec hour_field{"hour", 0, 23};
constexpr field_spec day_field{"day-of-month", 1, 31};
constexpr field_spec month_field{"month", 1, 12, month_names.data(),
                                 month_names.size()};
constexpr field_spec weekday_field{"day-of-week", 0, 7, weekday_names.data(),
                                   weekday_names.size()};

// The values of a field as bits; every field fits in 60.
using field_bits = std::bitset<60>;

// Parses one field of `expr` into the bits of the values it lists.
class field_parser {
public:
  field_parser(const field_spec& spec, std::string_view expr)
    : spec_(spec), expr_(expr) {
    // nop
  }

  caf::expected<field_bits> parse(std::string_view field) const {
    field_bits result;
    for (auto item : split(field, ',')) {
      if (item.empty())
        return fail("empty list item");
      if (auto err = add_item(item, result))
        return err;
    }
    return result;
  }

private:
  // Adds `base` or `base/step` to `bits`.
  caf::error add_item(std::string_view item, field_bits& bits) const {
    auto slash = item.find('/');
    auto base = item.substr(0, slash);
    auto step = 1;
    if (slash != std::string_view::npos) {
      auto x = parse_step(item.substr(slash + 1));
      if (!x)
        return std::move(x.error());
      step = *x;
    }
    auto range = parse_range(base, slash != std::string_view::npos);
    if (!range)
      return std::move(range.error());
    for (auto i = range->first; i <= range->second; i += step)
      bits.set(static_cast<size_t>(i));
    return caf::none;
  }

  // `*`, `A-B`, or `N` (up to the maximum if a step follows).
  caf::expected<std::pair<int, int>> parse_range(std::string_view base,
                                                 bool has_step) const {
    if (base == "*")
      return std::make_pair(spec_.min, spec_.max);
    auto dash = base.find('-');
    auto lo = parse_value(base.substr(0, dash));
    if (!lo)
      return std::move(lo.error());
    if (dash == std::string_view::npos)
      return std::make_pair(*lo, has_step ? spec_.max : *lo);
    auto hi = parse_value(base.substr(dash + 1));
    if (!hi)
      return std::move(hi.error());
    if (*lo > *hi)
      return fail("range " + std::string{base} + " runs backwards");
    return std::make_pair(*lo, *hi);
  }

  caf::expected<int> parse_value(std::string_view str) const {
    if (str.empty())
      return fail("missing value");
    if (all_of(str, is_alpha))
      return parse_name(str);
    if (!all_of(str, is_digit))
      return fail("invalid value \"" + std::string{str} + "\"");
    auto x = str.size() > 4 ? spec_.max + 1 : std::stoi(std::string{str});
    if (x < spec_.min || x > spec_.max)
      return fail("value " + std::string{str} + " out of range "
                  + std::to_string(spec_.min) + "-"
                  + std::to_string(spec_.max));
    return x;
  }

  caf::expected<int> parse_name(std::string_view str) const {
    auto name = lowercase(str);
    for (size_t i = 0; i < spec_.names_size; ++i)
      if (name == spec_.names[i])
        return spec_.min + static_cast<int>(i);
    if (spec_.names_size == 0)
      return fail("invalid value \"" + std::string{str} + "\"");
    return fail("unknown name \"" + std::string{str} + "\"");
  }

  // A step runs from 1 to the field's maximum.
  caf::expected<int> parse_step(std::string_view str) const {
    if (!all_of(str, is_digit))
      return fail("invalid step \"" + std::string{str} + "\"");
    auto x = str.size() > 4 ? spec_.max + 1 : std::stoi(std::string{str});
    if (x < 1 || x > spec_.max)
      return fail("step " + std::string{str} + " out of range 1-"
                  + std::to_string(spec_.max));
    return x;
  }

  caf::error fail(const std::string& what) const {
    return make_error(errc::invalid_argument, "cron: " + what + " in "
                                                + spec_.name + " field of \""
                                                + std::string{expr_} + "\"");
  }

  const field_spec& spec_;
  std::string_view expr_;
};

caf::error invalid(const std::string& what, std::string_view expr) {
  return make_error(errc::invalid_argument,
                    "cron: " + what + " in \"" + std::string{expr} + "\"");
}

// The 5-field form of a macro, or nullptr.
const char* expand_macro(std::string_view name) {
  static constexpr std::pair<const char*, const char*> macros[] = {
    {"@yearly", "0 0 1 1 *"},  {"@annually", "0 0 1 1 *"},
    {"@monthly", "0 0 1 * *"}, {"@weekly", "0 0 * * 0"},
    {"@daily", "0 0 * * *"},   {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
  };
  auto lower = lowercase(name);
  for (auto& [macro, fields] : macros)
    if (lower == macro)
      return fields;
  return nullptr;
}

// Splits `text` into its fields, expanding a macro.
caf::expected<std::vector<std::string_view>> fields_of(std::string_view text) {
  auto fields = split_blanks(text);
  if (!fields.empty() && fields[0].front() == '@') {
    auto expansion = expand_macro(fields[0]);
    if (expansion == nullptr)
      return invalid("unknown macro " + std::string{fields[0]}, text);
    if (fields.size() > 1)
      return invalid("fields after macro " + std::string{fields[0]}, text);
    return split_blanks(expansion);
  }
  if (fields.size() != 5 && fields.size() != 6)
    return invalid(
      "expected 5 or 6 fields but got " + std::to_string(fields.size()), text);
  return fields;
}

} // namespace cron_detail
} // namespace

caf::expected<local_time> local_time::parse(std::string_view str) {
  auto fail = [str](const char* what) {
    return make_error(errc::invalid_argument,
                      std::string{what} + ": \"" + std::string{str} + "\"");
  };
  // "YYYY-MM-DD HH:MM:SS": digits everywhere but at these positions.
  static constexpr char pattern[] = "0000-00-00 00:00:00";
  auto head = str.substr(0, 19);
  auto tail = str.substr(head.size());
  if (head.size() != 19)
    return fail("expected YYYY-MM-DD HH:MM:SS");
  for (size_t i = 0; i < head.size(); ++i)
    if (pattern[i] == '0' ? !cron_detail::is_digit(head[i])
                          : head[i] != pattern[i])
      return fail("expected YYYY-MM-DD HH:MM:SS");
  if (!tail.empty()
      && (tail[0] != '.'
          || !cron_detail::all_of(tail.substr(1), cron_detail::is_digit)))
    return fail("expected YYYY-MM-DD HH:MM:SS[.fraction]");
  auto num = [head](size_t pos, size_t len) {
    return std::stoi(std::string{head.substr(pos, len)});
  };
  local_time result{num(0, 4),  num(5, 2),  num(8, 2),
                    num(11, 2), num(14, 2), num(17, 2)};
  if (result.year < 1 || result.month < 1 || result.month > 12 || result.day < 1
      || result.day > cron_detail::days_in_month(result.year, result.month)
      || result.hour > 23 || result.minute > 59 || result.second > 59)
    return fail("timestamp out of range");
  return result;
}

std::string local_time::to_string() const {
  char buf[80];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02d %02d:%02d:%02d", year, month,
                day, hour, minute, second);
  return buf;
}

caf::expected<cron_expression> cron_expression::parse(std::string_view text) {
  text = cron_detail::trim(text);
  auto fields = cron_detail::fields_of(text);
  if (!fields)
    return std::move(fields.error());
  cron_expression result;
  result.text_ = std::string{text};
  result.has_seconds_ = fields->size() == 6;
  if (!result.has_seconds_)
    fields->insert(fields->begin(), "0");
  const cron_detail::field_spec* specs[]
    = {&cron_detail::second_field, &cron_detail::minute_field,
       &cron_detail::hour_field,   &cron_detail::day_field,
       &cron_detail::month_field,  &cron_detail::weekday_field};
  cron_detail::field_bits bits[6];
  for (size_t i = 0; i < 6; ++i) {
    auto x = cron_detail::field_parser{*specs[i], text}.parse((*fields)[i]);
    if (!x)
      return std::move(x.error());
    bits[i] = *x;
  }
  result.seconds_ = bits[0];
  result.minutes_ = bits[1];
  result.hours_ = std::bitset<24>{bits[2].to_ullong()};
  result.days_ = std::bitset<32>{bits[3].to_ullong()};
  result.months_ = std::bitset<13>{bits[4].to_ullong()};
  result.weekdays_ = std::bitset<8>{bits[5].to_ullong()};
  if (result.weekdays_[7])
    result.weekdays_.set(0).reset(7);
  result.any_day_of_month_ = (*fields)[3].front() == '*';
  result.any_weekday_ = (*fields)[5].front() == '*';
  return result;
}

bool cron_expression::day_matches(int year, int month, int day) const {
  auto by_day = days_[static_cast<size_t>(day)];
  auto by_weekday
    = weekdays_[static_cast<size_t>(cron_detail::weekday(year, month, day))];
  if (!any_day_of_month_ && !any_weekday_)
    return by_day || by_weekday;
  return by_day && by_weekday;
}

std::optional<local_time>
cron_expression::next_after(const local_time& t) const {
  // Starts one step after `t` and moves each field, largest first, to its
  // next allowed value; a field past its end carries into the one above
  // (minute 60 is the next hour) and resets the ones below.
  auto x = t;
  if (has_seconds_) {
    ++x.second;
  } else {
    x.second = 0;
    ++x.minute;
  }
  while (x.year <= t.year + 8) {
    if (auto month = cron_detail::next_set(months_, x.month);
        month != x.month) {
      x = month < 0 ? local_time{x.year + 1, 1, 1, 0, 0, 0}
                    : local_time{x.year, month, 1, 0, 0, 0};
    } else if (x.day > cron_detail::days_in_month(x.year, x.month)) {
      x = local_time{x.year, x.month + 1, 1, 0, 0, 0};
    } else if (!day_matches(x.year, x.month, x.day)) {
      x = local_time{x.year, x.month, x.day + 1, 0, 0, 0};
    } else if (auto hour = cron_detail::next_set(hours_, x.hour);
               hour != x.hour) {
      x = hour < 0 ? local_time{x.year, x.month, x.day + 1, 0, 0, 0}
                   : local_time{x.year, x.month, x.day, hour, 0, 0};
    } else if (auto minute = cron_detail::next_set(minutes_, x.minute);
               minute != x.minute) {
      x.second = 0;
      if (minute < 0) {
        ++x.hour;
        x.minute = 0;
      } else {
        x.minute = minute;
      }
    } else if (auto second = cron_detail::next_set(seconds_, x.second);
               second != x.second) {
      if (second < 0) {
        ++x.minute;
        x.second = 0;
      } else {
        x.second = second;
      }
    } else {
      return x;
    }
  }
  return std::nullopt;
}

} // namespace cafmq
