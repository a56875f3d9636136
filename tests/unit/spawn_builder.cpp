// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE spawn_builder
#include <caf/test/unit_test.hpp>

#include "cafmq/detail/spawn_access.hpp"

#include <set>

#include "cafmq/error.hpp"
#include "cafmq/registry.hpp"
#include "cafmq/spawn.hpp"

using namespace cafmq;
using namespace std::chrono_literals;

namespace spawn_builder_impl {

errc code(const spawn_builder& x) {
  return code_of(x.validate());
}

struct fixture {};
} // namespace spawn_builder_impl

using namespace spawn_builder_impl;

CAF_TEST_FIXTURE_SCOPE(spawn_builder_tests, spawn_builder_impl::fixture)

CAF_TEST(a builder with defaults is valid) {
  CAF_CHECK_EQUAL(code(spawn_builder{"send-mail"}), errc::none);
}

CAF_TEST(names must be non - empty short UTF - 8 without NUL) {
  CAF_CHECK_EQUAL(code(spawn_builder{""}), errc::invalid_name);
  CAF_CHECK_EQUAL(code(spawn_builder{std::string(256, 'x')}),
                  errc::invalid_name);
  CAF_CHECK_EQUAL(code(spawn_builder{std::string(255, 'x')}), errc::none);
  CAF_CHECK_EQUAL(code(spawn_builder{std::string("a\0b", 3)}),
                  errc::invalid_name);
  CAF_CHECK_EQUAL(code(spawn_builder{"\xC3\x28"}), errc::invalid_name);
  CAF_CHECK_EQUAL(code(spawn_builder{"x"}.channel_name(std::string(256, 'c'))),
                  errc::invalid_name);
  CAF_CHECK_EQUAL(code(spawn_builder{"x"}.channel_args(std::string(4097, 'c'))),
                  errc::invalid_name);
  CAF_CHECK_EQUAL(code(spawn_builder{"x"}.unique_key("")), errc::invalid_name);
  CAF_CHECK_EQUAL(code(spawn_builder{"täsk'; DROP TABLE x; --\"🚀"}),
                  errc::none);
}

CAF_TEST(option values are range checked) {
  CAF_CHECK_EQUAL(code(spawn_builder{"x"}.retries(-1)), errc::invalid_argument);
  CAF_CHECK_EQUAL(code(spawn_builder{"x"}.delay(std::chrono::seconds{-1})),
                  errc::invalid_argument);
  CAF_CHECK_EQUAL(code(spawn_builder{"x"}.backoff(10s).backoff_cap(5s)),
                  errc::invalid_argument);
  CAF_CHECK_EQUAL(code(spawn_builder{"x"}.commit_interval(0s)),
                  errc::invalid_argument);
  CAF_CHECK_EQUAL(code(spawn_builder{"x"}.timeout(0s)), errc::invalid_argument);
  CAF_CHECK_EQUAL(
    code(spawn_builder{"x"}.delay(1s).run_at(std::chrono::system_clock::now())),
    errc::invalid_argument);
  CAF_CHECK_EQUAL(code(spawn_builder{"x"}.id(uuid{})), errc::invalid_argument);
}

CAF_TEST(payloads must be valid JSON within the size limit) {
  CAF_CHECK_EQUAL(code(spawn_builder{"x"}.raw_json("{\"a\":")),
                  errc::invalid_json);
  CAF_CHECK_EQUAL(code(spawn_builder{"x"}.raw_json(std::string("\"a\0\"", 4))),
                  errc::invalid_json);
  CAF_CHECK_EQUAL(code(spawn_builder{"x"}.raw_json("{\"a\": [1, 2]}")),
                  errc::none);
  CAF_CHECK_EQUAL(code(spawn_builder{"x"}.json(std::string{"John"})),
                  errc::none);
  auto old = payload_limit();
  payload_limit(16);
  CAF_CHECK_EQUAL(code(spawn_builder{"x"}.bytes(std::string(17, 'b'))),
                  errc::payload_too_large);
  CAF_CHECK_EQUAL(code(spawn_builder{"x"}.bytes(std::string(16, 'b'))),
                  errc::none);
  payload_limit(old);
}

CAF_TEST(definitions supply defaults that builders override) {
  task_options opts;
  opts.channel_name = "foo";
  opts.retries = 2;
  opts.ordered = true;
  task_definition def{"example", [](current_task&) { return caf::error{}; },
                      opts};
  auto spec = cafmq::detail::spawn_access::to_spec(def.builder());
  CAF_CHECK(spec["channel_name"] == "foo");
  CAF_CHECK(spec["max_attempts"] == 3);
  CAF_CHECK(spec["ordered"] == true);
  auto over = cafmq::detail::spawn_access::to_spec(
    def.builder().channel_name("bar").ordered(false));
  CAF_CHECK(over["channel_name"] == "bar");
  CAF_CHECK(over["ordered"] == false);
}

CAF_TEST(the spawn spec keeps every string verbatim) {
  std::string odd = "q\"uote \\ back\tslash\x01 \xc3\xa9 ; DROP";
  auto spec
    = cafmq::detail::spawn_access::to_spec(spawn_builder{odd}
                                             .channel_name(odd)
                                             .channel_args("{\"a\": [1]}")
                                             .unique_key(odd)
                                             .raw_json("{\"s\": \"x\\\"y\"}")
                                             .bytes(std::string{"\0\xff", 2}));
  CAF_CHECK(spec["name"] == odd);
  CAF_CHECK(spec["channel_name"] == odd);
  CAF_CHECK(spec["channel_args"] == "{\"a\": [1]}");
  CAF_CHECK(spec["unique_key"] == odd);
  CAF_CHECK(nlohmann::json::parse(spec["json"].get<std::string>())["s"]
            == "x\"y");
  CAF_CHECK(spec["bytes"] == "AP8=");
}

CAF_TEST(a registry refuses repeated and empty names) {
  auto handler = [](current_task&) {
    return caf::error{};
  };
  auto ok = registry::make({{"a", handler, {}}, {"b", handler, {}}});
  CAF_REQUIRE(ok);
  CAF_CHECK_EQUAL(ok->names(), (std::vector<std::string>{"a", "b"}));
  CAF_CHECK(ok->find("a") != nullptr);
  CAF_CHECK(ok->find("c") == nullptr);
  auto twice = registry::make({{"a", handler, {}}, {"a", handler, {}}});
  CAF_CHECK_EQUAL(code_of(twice.error()), errc::invalid_name);
  auto empty = registry::make({{"", handler, {}}});
  CAF_CHECK_EQUAL(code_of(empty.error()), errc::invalid_name);
  // A definition needs a handler; a declaration (remote tasks) does not.
  auto none = registry::make({{"a", nullptr, {}}});
  CAF_CHECK_EQUAL(code_of(none.error()), errc::invalid_argument);
  registry remote;
  task_options defaults;
  defaults.channel_name = "far";
  CAF_CHECK(!remote.declare("r", defaults));
  CAF_REQUIRE(remote.find("r") != nullptr);
  CAF_CHECK(!remote.find("r")->handler);
  CAF_CHECK_EQUAL(remote.find("r")->defaults.channel_name, "far");
  CAF_CHECK_EQUAL(code_of(remote.declare("r")), errc::invalid_name);
  CAF_CHECK_EQUAL(code_of(remote.declare("")), errc::invalid_name);
}

CAF_TEST(copies of a builder draw ids of their own at spawn) {
  auto def = task_definition{"t", nullptr, {}};
  std::vector<spawn_builder> xs(9, def.builder().json(1));
  std::set<std::string> ids;
  for (auto& x : xs) {
    CAF_CHECK(!x.id());
    ids.insert(
      cafmq::detail::spawn_access::to_spec(x)["id"].get<std::string>());
  }
  CAF_CHECK_EQUAL(ids.size(), 9u);
  // Each spawn draws again: one builder spawned twice is two tasks.
  auto first
    = cafmq::detail::spawn_access::to_spec(xs[0])["id"].get<std::string>();
  auto second
    = cafmq::detail::spawn_access::to_spec(xs[0])["id"].get<std::string>();
  CAF_CHECK_NOT_EQUAL(first, second);
}

CAF_TEST(an id set explicitly is copied) {
  auto id = uuid::random();
  auto x = spawn_builder{"t"}.id(id);
  auto copy = x;
  CAF_REQUIRE(copy.id());
  CAF_CHECK(*copy.id() == id);
  CAF_CHECK(cafmq::detail::spawn_access::to_spec(copy)["id"] == to_string(id));
}

CAF_TEST_FIXTURE_SCOPE_END()
