#define CAF_SUITE expected
#include <caf/test/unit_test.hpp>

#include <memory>
#include <string>

#include "cafmq/error.hpp"
#include "cafmq/expected.hpp"

using namespace cafmq;

namespace expected_impl {

caf::expected<int> good() {
  return 42;
}

caf::expected<int> bad() {
  return make_error(errc::unknown_task, "no task with id 7");
}

// True if `f` throws an `E`.
template <class E, class F>
bool throws(F f) {
  try {
    f();
  } catch (const E&) {
    return true;
  }
  return false;
}

struct fixture {};
} // namespace expected_impl

using namespace expected_impl;

CAF_TEST_FIXTURE_SCOPE(expected_tests, expected_impl::fixture)

CAF_TEST(ok tells a value from an error) {
  CAF_CHECK(ok(good()));
  CAF_CHECK(!ok(bad()));
}

CAF_TEST(value_or falls back on an error only) {
  CAF_CHECK_EQUAL(value_or(good(), -1), 42);
  CAF_CHECK_EQUAL(value_or(bad(), -1), -1);
  caf::expected<std::string> text = std::string{"x"};
  CAF_CHECK_EQUAL(value_or(text, "fallback"), "x");
  // Move-only values move out of an rvalue.
  caf::expected<std::unique_ptr<int>> ptr = std::make_unique<int>(3);
  auto moved = value_or(std::move(ptr), nullptr);
  CAF_REQUIRE(moved != nullptr);
  CAF_CHECK_EQUAL(*moved, 3);
}

CAF_TEST(value_or_throw throws the rendered error with its code) {
  CAF_CHECK_EQUAL(value_or_throw(good()), 42);
  try {
    value_or_throw(bad());
    CAF_FAIL("no exception");
  } catch (const error_exception& e) {
    CAF_CHECK_EQUAL(std::string{e.what()},
                    "cafmq::unknown_task: no task with id 7");
    CAF_CHECK_EQUAL(code_of(e.error()), errc::unknown_task);
  }
  // Also a std::runtime_error for code that knows nothing of cafmq.
  CAF_CHECK(throws<std::runtime_error>([] { value_or_throw(bad()); }));
}

CAF_TEST(throw_if_error throws for an error and not for none) {
  throw_if_error(caf::none);
  CAF_CHECK(throws<error_exception>(
    [] { throw_if_error(make_error(errc::conflict)); }));
}

CAF_TEST_FIXTURE_SCOPE_END()
