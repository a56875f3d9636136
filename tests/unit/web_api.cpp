// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE web_api
#include <caf/test/unit_test.hpp>

#include "api.hpp"
#include "cafmq/duration.hpp"
#include "cafmq/error.hpp"
#include "cafmq/status_json.hpp"

using namespace cafmq;
using namespace cafmq::web;
using params = std::multimap<std::string, std::string>;

namespace web_api_impl {

struct fixture {};

} // namespace web_api_impl

CAF_TEST_FIXTURE_SCOPE(web_api_tests, web_api_impl::fixture)

CAF_TEST(durations take a number and a unit) {
  using namespace std::chrono;
  CAF_CHECK_EQUAL(parse_duration("90")->count(), 90'000'000);
  CAF_CHECK_EQUAL(parse_duration("90s")->count(), 90'000'000);
  CAF_CHECK_EQUAL(parse_duration("15min")->count(), 900'000'000);
  CAF_CHECK_EQUAL(parse_duration("2h")->count(), 7'200'000'000);
  CAF_CHECK_EQUAL(parse_duration("7d")->count(), 604'800'000'000);
  CAF_CHECK_EQUAL(parse_duration("250ms")->count(), 250'000);
  for (auto bad : {"", "h", "-5s", "+5s", " 5s", "5 s", "1.5s", "5weeks", "1e3",
                   "9999999999s"})
    CAF_CHECK(!parse_duration(bad));
}

CAF_TEST(a listing request reads every filter) {
  auto id = uuid::time_ordered();
  auto req = parse_list_request(params{{"state", "failed,cancelled"},
                                       {"name", "send_email"},
                                       {"channel", "mail"},
                                       {"older_than", "1h"},
                                       {"newer_than", "2d"},
                                       {"limit", "20"},
                                       {"after", to_string(id)},
                                       {"token", "ignored"}});
  CAF_REQUIRE(req);
  CAF_REQUIRE_EQUAL(req->filter.states.size(), 2u);
  CAF_CHECK(req->filter.states[0] == task_state::failed);
  CAF_CHECK(req->filter.states[1] == task_state::cancelled);
  CAF_CHECK_EQUAL(*req->filter.name, "send_email");
  CAF_CHECK_EQUAL(*req->filter.channel_name, "mail");
  CAF_CHECK_EQUAL(req->filter.older_than->count(), 3'600'000'000);
  CAF_CHECK_EQUAL(req->filter.newer_than->count(), 172'800'000'000);
  CAF_CHECK_EQUAL(req->limit, 20);
  CAF_CHECK(*req->after == id);
}

CAF_TEST(empty parameters leave the filter open) {
  auto req = parse_list_request(params{{"state", ""}, {"name", ""}});
  CAF_REQUIRE(req);
  CAF_CHECK(req->filter.states.empty());
  CAF_CHECK(!req->filter.name);
  CAF_CHECK_EQUAL(req->limit, 50);
}

CAF_TEST(a bad parameter is an invalid argument that names it) {
  auto check = [](params p, const std::string& name) {
    auto req = parse_list_request(p);
    CAF_REQUIRE(!req);
    CAF_CHECK(code_of(req.error()) == errc::invalid_argument);
    CAF_CHECK_NOT_EQUAL(render(req.error()).find(name), std::string::npos);
  };
  check({{"state", "pending,sleeping"}}, "sleeping");
  check({{"older_than", "soon"}}, "older_than");
  check({{"limit", "0"}}, "limit");
  check({{"limit", "1001"}}, "limit");
  check({{"limit", "x"}}, "limit");
  check({{"after", "not-a-uuid"}}, "after");
  check({{"colour", "red"}}, "colour");
}

CAF_TEST(errors map to HTTP statuses) {
  CAF_CHECK_EQUAL(error_response(make_error(errc::unknown_task)).first, 404);
  CAF_CHECK_EQUAL(error_response(make_error(errc::task_finished)).first, 409);
  CAF_CHECK_EQUAL(error_response(make_error(errc::invalid_argument)).first,
                  400);
  CAF_CHECK_EQUAL(error_response(make_error(errc::database_unavailable)).first,
                  503);
  CAF_CHECK_EQUAL(error_response(make_error(errc::database)).first, 500);
  auto body = error_response(make_error(errc::unknown_task)).second;
  CAF_CHECK_EQUAL(body["error"], "unknown_task");
}

CAF_TEST(times render as ISO 8601 UTC with milliseconds) {
  task_status::time_point t{std::chrono::milliseconds{1796106331486}};
  CAF_CHECK_EQUAL(iso8601(t), "2026-12-01T06:25:31.486Z");
}

CAF_TEST(invalid UTF - 8 in user data does not break a response) {
  task_row row;
  row.status.last_error = std::string{"bad \xff byte"};
  auto text = dump(to_json(row));
  CAF_CHECK_NOT_EQUAL(text.find("bad"), std::string::npos);
}

CAF_TEST_FIXTURE_SCOPE_END()
