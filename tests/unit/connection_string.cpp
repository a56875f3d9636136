// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE connection_string
#include <caf/test/unit_test.hpp>

#include <cstdlib>
#include <map>
#include <memory>
#include <string>

#include <libpq-fe.h>

#include "cafmq/connection_options.hpp"
#include "cafmq/error.hpp"

using namespace cafmq;

namespace connection_string_impl {

using settings = std::map<std::string, std::string>;

// What libpq reads from `conninfo`: the settings it states.
settings parse_back(const std::string& conninfo) {
  char* msg = nullptr;
  auto xs = PQconninfoParse(conninfo.c_str(), &msg);
  if (xs == nullptr) {
    std::string what = msg != nullptr ? msg : "out of memory";
    PQfreemem(msg);
    CAF_FAIL("libpq cannot read " << conninfo << ": " << what);
  }
  settings result;
  for (auto x = xs; x->keyword != nullptr; ++x)
    if (x->val != nullptr)
      result.emplace(x->keyword, x->val);
  PQconninfoFree(xs);
  return result;
}

std::string string_or_fail(const caf::expected<std::string>& x) {
  if (!x)
    CAF_FAIL("no connection string: " << render(x.error()));
  return *x;
}

const std::string default_options
  = "-c statement_timeout=30000 -c idle_in_transaction_session_timeout=60000";

// What connection_options{} adds to a URL that sets nothing.
settings defaults() {
  return {{"keepalives", "1"},           {"keepalives_idle", "10"},
          {"keepalives_interval", "5"},  {"keepalives_count", "3"},
          {"tcp_user_timeout", "30000"}, {"connect_timeout", "10"},
          {"application_name", "cafmq"}, {"options", default_options}};
}

settings with(settings xs, const settings& ys) {
  for (auto& [key, value] : ys)
    xs[key] = value;
  return xs;
}

// libpq's environment would count as the user's own settings.
struct fixture {
  fixture() {
    for (auto var : {"PGAPPNAME", "PGCONNECT_TIMEOUT", "PGOPTIONS"})
      ::unsetenv(var);
  }
};

} // namespace connection_string_impl

using namespace connection_string_impl;

CAF_TEST_FIXTURE_SCOPE(connection_string_tests, connection_string_impl::fixture)

CAF_TEST(a uri without a query gets every setting in a new query) {
  auto url = string_or_fail(connection_string("postgresql://db.example/app"));
  CAF_CHECK_EQUAL(url, "postgresql://db.example/app?keepalives=1"
                       "&keepalives_idle=10&keepalives_interval=5"
                       "&keepalives_count=3&tcp_user_timeout=30000"
                       "&connect_timeout=10&application_name=cafmq"
                       "&options=-c%20statement_timeout%3D30000%20-c%20idle_"
                       "in_transaction_session_timeout%3D60000");
  CAF_CHECK_EQUAL(parse_back(url), with(defaults(), {{"host", "db.example"},
                                                     {"dbname", "app"}}));
}

CAF_TEST(a uri with a query keeps it and gets the settings appended) {
  auto url = string_or_fail(
    connection_string("postgres://u@db.example:5433/app?sslmode=disable"));
  CAF_CHECK_EQUAL(url.rfind("postgres://u@db.example:5433/app?sslmode=disable"
                            "&keepalives=1&",
                            0),
                  0u);
  CAF_CHECK_EQUAL(parse_back(url), with(defaults(), {{"user", "u"},
                                                     {"host", "db.example"},
                                                     {"port", "5433"},
                                                     {"dbname", "app"},
                                                     {"sslmode", "disable"}}));
  auto bare = string_or_fail(connection_string("postgresql://"));
  CAF_CHECK_EQUAL(parse_back(bare), defaults());
  auto open_query = string_or_fail(connection_string("postgresql://h/app?"));
  CAF_CHECK_EQUAL(parse_back(open_query),
                  with(defaults(), {{"host", "h"}, {"dbname", "app"}}));
}

CAF_TEST(a key value string gets the settings quoted) {
  auto url = string_or_fail(
    connection_string("host=db.example  dbname = app port=5433"));
  CAF_CHECK_EQUAL(url.find("keepalives='1'") != std::string::npos, true);
  CAF_CHECK_EQUAL(parse_back(url), with(defaults(), {{"host", "db.example"},
                                                     {"dbname", "app"},
                                                     {"port", "5433"}}));
  // The empty string is libpq's "all defaults".
  CAF_CHECK_EQUAL(parse_back(string_or_fail(connection_string(""))),
                  defaults());
  // A value left empty at the end stays empty.
  auto open_end = string_or_fail(connection_string("host=h password="));
  CAF_CHECK_EQUAL(parse_back(open_end),
                  with(defaults(), {{"host", "h"}, {"password", ""}}));
}

CAF_TEST(quotes spaces and unicode in values survive both forms) {
  connection_options opts;
  opts.application_name = "it's a \\ wörker ✓ 100% & ?x=y";
  for (std::string base :
       {"postgresql://h/app", "postgresql://h/app?sslmode=disable",
        "host=h dbname=app"}) {
    auto back = parse_back(string_or_fail(connection_string(base, opts)));
    CAF_CHECK_EQUAL(back["application_name"], opts.application_name);
  }
  auto quoted = string_or_fail(
    connection_string("host=h password='it\\'s \\\\ ✓'", opts));
  auto back = parse_back(quoted);
  CAF_CHECK_EQUAL(back["password"], "it's \\ ✓");
}

CAF_TEST(a setting in the url wins over the default) {
  auto uri = string_or_fail(connection_string(
    "postgresql://h/app?keepalives_idle=99&application_name=mine"
    "&connect_timeout=0&options=-c%20statement_timeout%3D5s%20-c%20x.y%3Dz"));
  CAF_CHECK_EQUAL(
    parse_back(uri),
    with(defaults(),
         {{"host", "h"},
          {"dbname", "app"},
          {"keepalives_idle", "99"},
          {"application_name", "mine"},
          {"connect_timeout", "0"},
          {"options", "-c idle_in_transaction_session_timeout=60000 "
                      "-c statement_timeout=5s -c x.y=z"}}));
  // Every way the server takes a setting counts, as does turning
  // keepalives off, which leaves out their timing.
  auto kv = string_or_fail(connection_string(
    "host=h keepalives=0 "
    "options='--Statement-Timeout=1min -cidle_in_transaction_session_"
    "timeout=0'"));
  auto expected = with(
    defaults(), {{"host", "h"},
                 {"keepalives", "0"},
                 {"options", "--Statement-Timeout=1min "
                             "-cidle_in_transaction_session_timeout=0"}});
  for (auto key :
       {"keepalives_idle", "keepalives_interval", "keepalives_count"})
    expected.erase(key);
  CAF_CHECK_EQUAL(parse_back(kv), expected);
}

CAF_TEST(libpq environment variables win like the url) {
  ::setenv("PGAPPNAME", "from-env", 1);
  ::setenv("PGOPTIONS", "-c search_path=q", 1);
  auto url = string_or_fail(connection_string("host=h"));
  ::unsetenv("PGAPPNAME");
  ::unsetenv("PGOPTIONS");
  auto expected
    = with(defaults(),
           {{"host", "h"}, {"options", default_options + " -c search_path=q"}});
  // libpq reads PGAPPNAME itself; PGOPTIONS is in the options cafmq sends.
  expected.erase("application_name");
  CAF_CHECK_EQUAL(parse_back(url), expected);
}

CAF_TEST(zero disables a timeout and leaves tcp settings to the system) {
  connection_options opts;
  opts.statement_timeout = std::chrono::milliseconds{0};
  opts.keepalives_idle = std::chrono::seconds{0};
  opts.keepalives_count = 0;
  opts.tcp_user_timeout = std::chrono::milliseconds{0};
  opts.connect_timeout = std::chrono::seconds{0};
  auto url = string_or_fail(connection_string("host=h", opts));
  auto expected
    = with(defaults(), {{"host", "h"},
                        {"options", "-c statement_timeout=0 "
                                    "-c idle_in_transaction_session_timeout="
                                    "60000"}});
  for (auto key : {"keepalives_idle", "keepalives_count", "tcp_user_timeout",
                   "connect_timeout"})
    expected.erase(key);
  CAF_CHECK_EQUAL(parse_back(url), expected);
}

CAF_TEST(empty timeouts or session settings leave the options out) {
  connection_options opts;
  opts.statement_timeout = std::nullopt;
  opts.idle_in_transaction_session_timeout = std::nullopt;
  auto none = string_or_fail(connection_string("host=h", opts));
  auto expected = with(defaults(), {{"host", "h"}});
  expected.erase("options");
  CAF_CHECK_EQUAL(parse_back(none), expected);
  connection_options by_set;
  by_set.send_session_settings = false;
  auto later = string_or_fail(
    connection_string("host=h options='-c search_path=q'", by_set));
  CAF_CHECK_EQUAL(parse_back(later),
                  with(expected, {{"options", "-c search_path=q"}}));
}

CAF_TEST(a malformed url is an invalid argument) {
  for (std::string url :
       {"postgresql://h/app?no_such_setting=1", "host=h dbname",
        "host='unterminated", "postgresql://[::1/app"}) {
    auto result = connection_string(url);
    CAF_REQUIRE(!result);
    CAF_CHECK_EQUAL(code_of(result.error()), errc::invalid_argument);
    CAF_MESSAGE(render(result.error()));
    CAF_CHECK_EQUAL(
      render(result.error())
        .rfind("cafmq::invalid_argument: malformed database URL:", 0),
      0u);
  }
}

CAF_TEST(a negative setting is an invalid argument) {
  auto refused = [](connection_options opts, const std::string& name) {
    auto result = connection_string("host=h", opts);
    CAF_REQUIRE(!result);
    CAF_CHECK_EQUAL(code_of(result.error()), errc::invalid_argument);
    CAF_CHECK_EQUAL(render(result.error()).find(name + " must be between 0"),
                    std::string{"cafmq::invalid_argument: "}.size());
  };
  connection_options opts;
  opts.statement_timeout = std::chrono::milliseconds{-1};
  refused(opts, "statement_timeout");
  opts = {};
  opts.idle_in_transaction_session_timeout = std::chrono::milliseconds{-5};
  refused(opts, "idle_in_transaction_session_timeout");
  opts = {};
  opts.keepalives_count = -1;
  refused(opts, "keepalives_count");
  opts = {};
  opts.connect_timeout = std::chrono::seconds{-1};
  refused(opts, "connect_timeout");
  opts = {};
  opts.statement_timeout = std::chrono::hours{24 * 30};
  refused(opts, "statement_timeout");
}

CAF_TEST_FIXTURE_SCOPE_END()
