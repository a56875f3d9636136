// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE cron
#include <caf/test/unit_test.hpp>

#include <string>
#include <vector>

#include "cafmq/cron.hpp"
#include "cafmq/error.hpp"

using namespace cafmq;

namespace cron_impl {

struct next_row {
  const char* expr;
  const char* from;
  // "none" for no match within the search window.
  const char* next;
};

// Expected times checked against a brute-force scan (Python datetime).
// 2026-03-13 is a Friday, 2026-03-16 a Monday, 2027-01-01 a Friday.
const std::vector<next_row> next_rows = {
  // Every field type; "strictly after" from a matching time.
  {"* * * * *", "2026-03-10 12:34:56", "2026-03-10 12:35:00"},
  {"* * * * *", "2026-03-10 12:34:00", "2026-03-10 12:35:00"},
  {"0 * * * *", "2026-03-10 12:00:00", "2026-03-10 13:00:00"},
  {"30 9 * * *", "2026-03-10 09:30:00", "2026-03-11 09:30:00"},
  {"30 9 * * *", "2026-03-10 09:29:59", "2026-03-10 09:30:00"},
  {"05 08 * * *", "2026-03-10 08:04:00", "2026-03-10 08:05:00"},
  {"0 3 * * *", "2026-03-10 03:00:30", "2026-03-11 03:00:00"},
  // Steps, ranges with steps, lists.
  {"*/15 * * * *", "2026-03-10 12:44:59", "2026-03-10 12:45:00"},
  {"*/15 * * * *", "2026-03-10 23:45:00", "2026-03-11 00:00:00"},
  {"5/20 * * * *", "2026-03-10 12:46:00", "2026-03-10 13:05:00"},
  {"10-20/5 * * * *", "2026-03-10 12:21:00", "2026-03-10 13:10:00"},
  {"0 9-17/4 * * *", "2026-03-10 13:00:00", "2026-03-10 17:00:00"},
  {"0 9-17/4 * * *", "2026-03-10 17:00:00", "2026-03-11 09:00:00"},
  {"15,45 8,20 * * *", "2026-03-10 08:45:00", "2026-03-10 20:15:00"},
  {"0,30 1-2,22 * * *", "2026-03-10 02:30:00", "2026-03-10 22:00:00"},
  // Month ends, leap days (2100 is no leap year), nothing to match.
  {"0 0 1 * *", "2026-03-15 10:00:00", "2026-04-01 00:00:00"},
  {"0 12 31 * *", "2026-01-31 12:00:00", "2026-03-31 12:00:00"},
  {"0 12 31 * *", "2026-03-31 12:00:00", "2026-05-31 12:00:00"},
  {"0 0 31 * *", "2026-12-31 00:00:00", "2027-01-31 00:00:00"},
  {"0 0 31 feb-apr *", "2026-01-01 00:00:00", "2026-03-31 00:00:00"},
  {"0 0 29 2 *", "2026-01-01 00:00:00", "2028-02-29 00:00:00"},
  {"0 0 29 2 *", "2000-01-01 00:00:00", "2000-02-29 00:00:00"},
  {"0 0 29 2 *", "2096-03-01 00:00:00", "2104-02-29 00:00:00"},
  {"0 0 28-31 2 *", "2028-02-28 00:00:00", "2028-02-29 00:00:00"},
  {"0 0 28-31 2 *", "2027-02-28 00:00:00", "2028-02-28 00:00:00"},
  {"0 0 30 2 *", "2026-01-01 00:00:00", "none"},
  {"0 0 31 4,6,9,11 *", "2026-01-01 00:00:00", "none"},
  // Year rollover.
  {"0 0 1 1 *", "2026-12-31 23:59:59", "2027-01-01 00:00:00"},
  {"59 23 31 12 *", "2026-12-31 23:59:00", "2027-12-31 23:59:00"},
  {"* * * * *", "2026-12-31 23:59:30", "2027-01-01 00:00:00"},
  // Month and weekday names, 7 as Sunday, N/S from N to the maximum.
  {"0 0 * jan,jul *", "2026-02-01 00:00:00", "2026-07-01 00:00:00"},
  {"0 0 1 JUN-aug/2 *", "2026-06-01 00:00:00", "2026-08-01 00:00:00"},
  {"0 0 1 */3 *", "2026-04-01 00:00:00", "2026-07-01 00:00:00"},
  {"0 9 * * mon-fri", "2026-03-13 09:00:00", "2026-03-16 09:00:00"},
  {"0 22 * * 1-5", "2026-03-13 22:00:00", "2026-03-16 22:00:00"},
  {"0 0 * * 6,0", "2026-03-13 00:00:00", "2026-03-14 00:00:00"},
  {"0 0 * * 0", "2026-03-16 00:00:00", "2026-03-22 00:00:00"},
  {"0 0 * * 7", "2026-03-16 00:00:00", "2026-03-22 00:00:00"},
  {"0 0 * * Sun", "2026-03-16 00:00:00", "2026-03-22 00:00:00"},
  {"0 0 * * 5-7", "2026-03-14 00:00:00", "2026-03-15 00:00:00"},
  {"0 0 * * 1/2", "2026-03-13 00:00:00", "2026-03-15 00:00:00"},
  {"0 0 * * */2", "2026-03-16 00:00:00", "2026-03-17 00:00:00"},
  {"0 0 * * 1", "2026-12-30 00:00:00", "2027-01-04 00:00:00"},
  // Both day fields restricted: either matches (Vixie). One starting
  // with `*` (even `*/2`): both must match.
  {"0 0 13 * fri", "2026-03-01 00:00:00", "2026-03-06 00:00:00"},
  {"0 0 13 * fri", "2026-03-06 00:00:00", "2026-03-13 00:00:00"},
  {"0 0 1 * mon", "2026-03-30 00:00:00", "2026-04-01 00:00:00"},
  {"0 0 1-7 * 1", "2026-03-10 00:00:00", "2026-03-16 00:00:00"},
  {"0 0 */2 * mon", "2026-03-01 00:00:00", "2026-03-09 00:00:00"},
  {"0 0 13 * *", "2026-03-01 00:00:00", "2026-03-13 00:00:00"},
  // Macros.
  {"@yearly", "2026-05-05 10:00:00", "2027-01-01 00:00:00"},
  {"@annually", "2026-05-05 10:00:00", "2027-01-01 00:00:00"},
  {"@monthly", "2026-05-05 10:00:00", "2026-06-01 00:00:00"},
  {"@weekly", "2026-03-18 10:00:00", "2026-03-22 00:00:00"},
  {"@daily", "2026-03-18 00:00:00", "2026-03-19 00:00:00"},
  {"@midnight", "2026-03-18 23:59:59", "2026-03-19 00:00:00"},
  {"@HOURLY", "2026-03-18 10:59:59", "2026-03-18 11:00:00"},
  // Six fields: seconds first.
  {"*/10 * * * * *", "2026-03-10 12:00:05", "2026-03-10 12:00:10"},
  {"30 * * * * *", "2026-03-10 12:00:30", "2026-03-10 12:01:30"},
  {"* * * * * *", "2026-12-31 23:59:59", "2027-01-01 00:00:00"},
  {"15-17 30 2 * * *", "2026-03-10 02:30:16", "2026-03-10 02:30:17"},
  {"15-17 30 2 * * *", "2026-03-10 02:30:17", "2026-03-11 02:30:15"},
  {"0 0 0 * * *", "2026-03-10 00:00:00", "2026-03-11 00:00:00"},
  {"5/20 0 12 29 2 *", "2026-03-10 00:00:00", "2028-02-29 12:00:05"},
  // Blanks around and between fields.
  {"  0 0 5 * *  ", "2026-03-05 00:00:00", "2026-04-05 00:00:00"},
  {"0\t12  * * *", "2026-03-10 11:00:00", "2026-03-10 12:00:00"},
};

struct invalid_row {
  const char* expr;
  // What the error message must contain.
  const char* what;
};

const std::vector<invalid_row> invalid_rows = {
  {"", "expected 5 or 6 fields but got 0"},
  {"* * * *", "expected 5 or 6 fields but got 4"},
  {"* * * * * * *", "expected 5 or 6 fields but got 7"},
  {"60 * * * *", "value 60 out of range 0-59 in minute field"},
  {"* 24 * * *", "value 24 out of range 0-23 in hour field"},
  {"* * 0 * *", "value 0 out of range 1-31 in day-of-month field"},
  {"* * 32 * *", "value 32 out of range 1-31 in day-of-month field"},
  {"* * * 0 *", "value 0 out of range 1-12 in month field"},
  {"* * * 13 *", "value 13 out of range 1-12 in month field"},
  {"* * * * 8", "value 8 out of range 0-7 in day-of-week field"},
  {"60 * * * * *", "value 60 out of range 0-59 in second field"},
  {"99999999999 * * * *", "out of range 0-59 in minute field"},
  {"*/0 * * * *", "step 0 out of range 1-59 in minute field"},
  {"* 1-5/0 * * *", "step 0 out of range 1-23 in hour field"},
  {"*/60 * * * *", "step 60 out of range 1-59 in minute field"},
  {"*/ * * * *", "invalid step \"\" in minute field"},
  {"*/x * * * *", "invalid step \"x\" in minute field"},
  {"1/2/3 * * * *", "invalid step \"2/3\" in minute field"},
  {"5-1 * * * *", "range 5-1 runs backwards in minute field"},
  {"* * * dec-jan *", "range dec-jan runs backwards in month field"},
  {"* * * * sat-sun", "range sat-sun runs backwards in day-of-week field"},
  {"* * * foo *", "unknown name \"foo\" in month field"},
  {"* * * * monday", "unknown name \"monday\" in day-of-week field"},
  {"* * * * jan", "unknown name \"jan\" in day-of-week field"},
  {"mon * * * *", "invalid value \"mon\" in minute field"},
  {"1,,2 * * * *", "empty list item in minute field"},
  {",1 * * * *", "empty list item in minute field"},
  {"* * 1, * *", "empty list item in day-of-month field"},
  {"1-2-3 * * * *", "invalid value \"2-3\" in minute field"},
  {"- * * * *", "missing value in minute field"},
  {"* -1 * * *", "missing value in hour field"},
  {"* * L * *", "invalid value \"L\" in day-of-month field"},
  {"? * * * *", "invalid value \"?\" in minute field"},
  {"** * * * *", "invalid value \"**\" in minute field"},
  {"* * * * 1#2", "invalid value \"1#2\" in day-of-week field"},
  {"@reboot", "unknown macro @reboot"},
  {"@every 5m", "unknown macro @every"},
  {"@daily 0", "fields after macro @daily"},
};

std::string show(const std::optional<local_time>& x) {
  return x ? x->to_string() : "none";
}

struct fixture {};
} // namespace cron_impl

using namespace cron_impl;

CAF_TEST_FIXTURE_SCOPE(cron_tests, cron_impl::fixture)

CAF_TEST(next times match the table) {
  for (auto& row : next_rows) {
    auto expr = cron_expression::parse(row.expr);
    auto from = local_time::parse(row.from);
    if (!expr || !from)
      CAF_FAIL("bad table row for " << row.expr);
    auto next = show(expr->next_after(*from));
    // The expression in both strings names the row of a failed check.
    CAF_CHECK_EQUAL(std::string{row.expr} + " after " + row.from + ": " + next,
                    std::string{row.expr} + " after " + row.from + ": "
                      + row.next);
  }
}

CAF_TEST(leap days skip centuries not divisible by 400) {
  auto expr = cron_expression::parse("0 0 29 2 *");
  CAF_REQUIRE(expr);
  std::vector<int> years;
  auto t = std::optional<local_time>{local_time{1999, 1, 1, 0, 0, 0}};
  while (years.size() < 5 && (t = expr->next_after(*t)))
    years.push_back(t->year);
  CAF_CHECK_EQUAL(years, std::vector<int>({2000, 2004, 2008, 2012, 2016}));
  auto from = local_time{2096, 2, 29, 0, 0, 0};
  auto next = show(expr->next_after(from));
  CAF_CHECK_EQUAL(next, "2104-02-29 00:00:00");
}

CAF_TEST(invalid expressions fail naming what is wrong) {
  for (auto& row : invalid_rows) {
    auto expr = cron_expression::parse(row.expr);
    if (expr) {
      CAF_ERROR("parsed an invalid expression: " << row.expr);
      continue;
    }
    auto code = code_of(expr.error());
    CAF_CHECK_EQUAL(code, errc::invalid_argument);
    auto msg = render(expr.error());
    auto want = std::string{row.what};
    auto quoted = "\"" + std::string{row.expr} + "\"";
    // Shows the message on a failed check.
    auto found = msg.find(want) != std::string::npos
                     && msg.find(quoted) != std::string::npos
                   ? want
                   : msg;
    CAF_CHECK_EQUAL(found, want);
  }
  auto expr = cron_expression::parse(" 60 * * * *\t");
  CAF_REQUIRE(!expr);
  auto msg = render(expr.error());
  CAF_CHECK_EQUAL(msg, "cafmq::invalid_argument: cron: value 60 out of range "
                       "0-59 in minute field of \"60 * * * *\"");
}

CAF_TEST(expressions keep their trimmed text and form) {
  auto five = cron_expression::parse("  */5 * * * *\t");
  CAF_REQUIRE(five);
  auto text = five->text();
  CAF_CHECK_EQUAL(text, "*/5 * * * *");
  CAF_CHECK(!five->has_seconds());
  auto six = cron_expression::parse("0 */5 * * * *");
  CAF_REQUIRE(six);
  CAF_CHECK(six->has_seconds());
  auto macro = cron_expression::parse("@Daily");
  CAF_REQUIRE(macro);
  auto macro_text = macro->text();
  CAF_CHECK_EQUAL(macro_text, "@Daily");
  CAF_CHECK(!macro->has_seconds());
}

CAF_TEST(local times parse from the text of a PostgreSQL timestamp) {
  struct row {
    const char* text;
    const char* parsed;
  };
  std::vector<row> valid = {
    {"2026-12-02 05:13:07", "2026-12-02 05:13:07"},
    {"2026-12-02 05:13:07.123456", "2026-12-02 05:13:07"},
    {"2026-12-02 05:13:07.9", "2026-12-02 05:13:07"},
    {"2028-02-29 23:59:59.999999", "2028-02-29 23:59:59"},
    {"0001-01-01 00:00:00", "0001-01-01 00:00:00"},
    {"9999-12-31 23:59:59", "9999-12-31 23:59:59"},
  };
  for (auto& x : valid) {
    auto t = local_time::parse(x.text);
    auto str = t ? t->to_string() : render(t.error());
    CAF_CHECK_EQUAL(str, x.parsed);
  }
  auto t = local_time::parse("2026-12-02 05:13:07.5");
  CAF_REQUIRE(t);
  CAF_CHECK(*t == (local_time{2026, 12, 2, 5, 13, 7}));
  std::vector<const char*> invalid = {
    "",
    "2026-12-02",
    "2026-12-02T05:13:07",
    "2026-12-02 05:13",
    " 2026-12-02 05:13:07",
    "2026-12-02 05:13:07 ",
    "2026-12-02 05:13:07.",
    "2026-12-02 05:13:07.12a",
    "2026-12-02 05:13:07+00",
    "2026-1-02 05:13:07",
    "0000-01-01 00:00:00",
    "2026-00-01 00:00:00",
    "2026-13-01 00:00:00",
    "2026-04-31 00:00:00",
    "2026-02-29 00:00:00",
    "2100-02-29 00:00:00",
    "2026-12-02 24:00:00",
    "2026-12-02 05:60:00",
    "2026-12-02 05:13:60",
    "infinity",
  };
  for (auto x : invalid) {
    auto parsed = local_time::parse(x);
    auto code = parsed ? errc::none : code_of(parsed.error());
    CAF_CHECK_EQUAL(std::string{x} + ": " + to_string(code),
                    std::string{x} + ": invalid_argument");
  }
}

CAF_TEST(local times order by their fields) {
  auto x = local_time{2026, 3, 10, 12, 0, 0};
  auto y = local_time{2026, 3, 10, 12, 0, 1};
  auto z = local_time{2026, 4, 1, 0, 0, 0};
  CAF_CHECK(x < y);
  CAF_CHECK(y < z);
  CAF_CHECK(!(y < x));
  CAF_CHECK(x != y);
  CAF_CHECK(x == (local_time{2026, 3, 10, 12, 0, 0}));
  auto str = x.to_string();
  CAF_CHECK_EQUAL(str, "2026-03-10 12:00:00");
}

CAF_TEST_FIXTURE_SCOPE_END()
