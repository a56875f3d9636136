// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE metrics_address
#include <caf/test/unit_test.hpp>

#include <string>

#include "cafmq/actors/detail/metrics.hpp"
#include "cafmq/error.hpp"

using namespace cafmq::actors;

namespace metrics_address_impl {

std::string bound(const std::string& listen) {
  auto x = metrics_bind_address(listen);
  if (!x)
    return "error: " + cafmq::render(x.error());
  return *x;
}

struct fixture {};
} // namespace metrics_address_impl

using namespace metrics_address_impl;

CAF_TEST_FIXTURE_SCOPE(metrics_address_tests, metrics_address_impl::fixture)

CAF_TEST(a bare port or a port after a colon binds loopback) {
  CAF_CHECK_EQUAL(bound("9100"), "127.0.0.1:9100");
  CAF_CHECK_EQUAL(bound(":9100"), "127.0.0.1:9100");
  CAF_CHECK_EQUAL(bound("localhost:9100"), "127.0.0.1:9100");
  CAF_CHECK_EQUAL(bound(":0"), "127.0.0.1:0");
}

CAF_TEST(a host and port bind that host) {
  CAF_CHECK_EQUAL(bound("0.0.0.0:9100"), "0.0.0.0:9100");
  CAF_CHECK_EQUAL(bound("10.1.2.3:80"), "10.1.2.3:80");
  CAF_CHECK_EQUAL(bound("[::1]:9100"), "[::1]:9100");
}

CAF_TEST(an address without a valid port is an invalid argument) {
  for (auto x : {"", ":", "host:", "host", "9100x", "65536", "::1:9100",
                 "1.2.3.4:-1", "1.2.3.4:123456"}) {
    auto result = metrics_bind_address(x);
    CAF_CHECK(!result);
    if (!result)
      CAF_CHECK_EQUAL(cafmq::code_of(result.error()),
                      cafmq::errc::invalid_argument);
  }
}

CAF_TEST(an endpoint on port zero serves on the port it took) {
  auto endpoint = metrics_endpoint::start("127.0.0.1:0");
  CAF_REQUIRE(endpoint);
  CAF_CHECK_NOT_EQUAL((*endpoint)->port(), 0u);
  CAF_CHECK_EQUAL((*endpoint)->address(),
                  "127.0.0.1:" + std::to_string((*endpoint)->port()));
  // The port is taken: a second endpoint on it fails with a clear error.
  auto second = metrics_endpoint::start((*endpoint)->address());
  CAF_REQUIRE(!second);
  CAF_CHECK_NOT_EQUAL(cafmq::render(second.error()).find("cannot serve"),
                      std::string::npos);
}

CAF_TEST_FIXTURE_SCOPE_END()
