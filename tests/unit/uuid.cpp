#define CAF_SUITE uuid
#include <caf/test/unit_test.hpp>

#include <set>

#include "cafmq/error.hpp"
#include "cafmq/uuid.hpp"

using namespace cafmq;

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
