// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE web_auth
#include <caf/test/unit_test.hpp>

#include "auth.hpp"

using namespace cafmq::web;

namespace web_auth_impl {

gate with_token() {
  gate g;
  g.token = "s3cret";
  return g;
}

struct fixture {};
} // namespace web_auth_impl

using namespace web_auth_impl;

CAF_TEST_FIXTURE_SCOPE(web_auth_tests, web_auth_impl::fixture)

CAF_TEST(random secrets differ and have the asked length) {
  auto x = random_hex(32);
  CAF_CHECK_EQUAL(x.size(), 64u);
  CAF_CHECK_NOT_EQUAL(x, random_hex(32));
}

CAF_TEST(basic credentials decode) {
  // "alice:pa:ss" in base64.
  auto x = parse_basic("Basic YWxpY2U6cGE6c3M=");
  CAF_REQUIRE(x);
  CAF_CHECK_EQUAL(x->first, "alice");
  CAF_CHECK_EQUAL(x->second, "pa:ss");
  CAF_CHECK(!parse_basic("Bearer YWxpY2U6cGE6c3M="));
  CAF_CHECK(!parse_basic("Basic !!!"));
  CAF_CHECK(!parse_basic("Basic YWxpY2U=")); // no colon
}

CAF_TEST(cookies are found by name) {
  // Kept: CAF_CHECK_EQUAL would read a temporary after its end.
  auto found = cookie_value("a=1; cafmq_dashboard=xyz; b=2", "cafmq_dashboard");
  CAF_REQUIRE(found);
  CAF_CHECK_EQUAL(*found, "xyz");
  CAF_CHECK(!cookie_value("a=1; b=2", "cafmq_dashboard"));
  CAF_CHECK(!cookie_value("", "cafmq_dashboard"));
}

CAF_TEST(hosts are taken from authorities and checked for loopback) {
  CAF_CHECK_EQUAL(host_of("127.0.0.1:8080"), "127.0.0.1");
  CAF_CHECK_EQUAL(host_of("[::1]:8080"), "::1");
  CAF_CHECK_EQUAL(host_of("localhost"), "localhost");
  CAF_CHECK(is_loopback("127.0.0.1"));
  CAF_CHECK(is_loopback("127.1.2.3"));
  CAF_CHECK(is_loopback("::1"));
  CAF_CHECK(is_loopback("LocalHost"));
  CAF_CHECK(!is_loopback("0.0.0.0"));
  CAF_CHECK(!is_loopback("evil.example"));
  CAF_CHECK(!is_loopback("127.0.0.1.evil.example"));
  CAF_CHECK(is_loopback("0:0:0:0:0:0:0:1"));
}

CAF_TEST(a token authenticates as bearer or through the session cookie) {
  auto g = with_token();
  CAF_CHECK(g.authenticate("Bearer s3cret", "") == credential::bearer);
  CAF_CHECK(g.authenticate("bearer s3cret", "") == credential::bearer);
  CAF_CHECK(!g.authenticate("Bearer wrong", ""));
  CAF_CHECK(!g.authenticate("", ""));
  CAF_CHECK(g.authenticate("", "cafmq_dashboard=" + g.session)
            == credential::cookie);
  // The cookie holds the session, never the token itself.
  CAF_CHECK(!g.authenticate("", "cafmq_dashboard=s3cret"));
}

CAF_TEST(basic auth needs user and password) {
  gate g;
  g.user = "alice";
  g.password = "pa:ss";
  CAF_CHECK(g.authenticate("Basic YWxpY2U6cGE6c3M=", "") == credential::basic);
  CAF_CHECK(!g.authenticate("Basic YWxpY2U6cGE=", "")); // alice:pa
  CAF_CHECK(!g.authenticate("Bearer pa:ss", ""));
}

CAF_TEST(without a token or user every request is admitted) {
  gate g;
  CAF_CHECK(g.open());
  CAF_CHECK(g.authenticate("", "") == credential::open);
}

CAF_TEST(actions need the CSRF token and no foreign origin) {
  auto g = with_token();
  auto host = "127.0.0.1:8080";
  CAF_CHECK_EQUAL(g.check_action(credential::cookie, g.csrf,
                                 "http://127.0.0.1:8080", host, "same-origin"),
                  "");
  CAF_CHECK_NOT_EQUAL(g.check_action(credential::cookie, "", "", host, ""), "");
  CAF_CHECK_NOT_EQUAL(g.check_action(credential::open, "wrong", "", host, ""),
                      "");
  CAF_CHECK_NOT_EQUAL(
    g.check_action(credential::cookie, g.csrf, "http://evil.example", host, ""),
    "");
  CAF_CHECK_NOT_EQUAL(
    g.check_action(credential::cookie, g.csrf, "", host, "cross-site"), "");
  // A Bearer header is no ambient credential: no CSRF token needed, but a
  // browser's foreign Origin is still refused.
  CAF_CHECK_EQUAL(g.check_action(credential::bearer, "", "", host, ""), "");
  CAF_CHECK_NOT_EQUAL(
    g.check_action(credential::bearer, "", "http://evil.example", host, ""),
    "");
}

CAF_TEST_FIXTURE_SCOPE_END()
