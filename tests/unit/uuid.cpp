// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE uuid
#include <caf/test/unit_test.hpp>

#include <chrono>
#include <set>

#include "cafmq/error.hpp"
#include "cafmq/uuid.hpp"

using namespace cafmq;

namespace uuid_impl {

struct fixture {};

} // namespace uuid_impl

CAF_TEST_FIXTURE_SCOPE(uuid_tests, uuid_impl::fixture)

CAF_TEST(random uuids are version 4 and distinct) {
  std::set<uuid> seen;
  for (int i = 0; i < 1000; ++i) {
    auto x = uuid::random();
    CAF_CHECK_EQUAL(x.bytes()[6] >> 4, 4);
    CAF_CHECK_EQUAL(x.bytes()[8] >> 6, 2);
    seen.insert(x);
  }
  CAF_CHECK_EQUAL(seen.size(), 1000u);
}

CAF_TEST(time ordered uuids are version 7 and follow the clock) {
  std::set<uuid> seen;
  auto ms = [](const uuid& x) {
    std::uint64_t result = 0;
    for (size_t i = 0; i < 6; ++i)
      result = (result << 8) | x.bytes()[i];
    return result;
  };
  auto now = static_cast<std::uint64_t>(
    std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::system_clock::now().time_since_epoch())
      .count());
  std::uint64_t last = 0;
  for (int i = 0; i < 1000; ++i) {
    auto x = uuid::time_ordered();
    CAF_CHECK_EQUAL(x.bytes()[6] >> 4, 7);
    CAF_CHECK_EQUAL(x.bytes()[8] >> 6, 2);
    CAF_CHECK_GREATER_OR_EQUAL(ms(x), last);
    last = ms(x);
    seen.insert(x);
  }
  CAF_CHECK_GREATER_OR_EQUAL(last, now);
  CAF_CHECK_LESS(last, now + 60000);
  CAF_CHECK_EQUAL(seen.size(), 1000u);
}

CAF_TEST(uuids round - trip through text) {
  auto x = uuid::random();
  auto str = to_string(x);
  CAF_CHECK_EQUAL(str.size(), 36u);
  CAF_CHECK(uuid::parse(str) == x);
  CAF_CHECK(uuid::parse("6F9619FF-8B86-D011-B42D-00CF4FC964FF").has_value());
  CAF_CHECK(!uuid::parse("6f9619ff8b86d011b42d00cf4fc964ff").has_value());
  CAF_CHECK(!uuid::parse("6f9619ff-8b86-d011-b42d-00cf4fc964fg").has_value());
  CAF_CHECK(uuid{}.nil());
}

CAF_TEST(errors render with their code and context) {
  CAF_CHECK_EQUAL(render(make_error(errc::invalid_json, "expected value")),
                  "cafmq::invalid_json: expected value");
  CAF_CHECK_EQUAL(code_of(make_error(errc::stale_attempt)),
                  errc::stale_attempt);
  CAF_CHECK_EQUAL(code_of(caf::error{}), errc::none);
}

CAF_TEST_FIXTURE_SCOPE_END()
