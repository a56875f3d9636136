// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE connection_breaker
#include <caf/test/unit_test.hpp>

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <iterator>
#include <mutex>
#include <thread>

#include <signal.h>

#include <caf/detail/scope_guard.hpp>

#include "cafmq/detail/connection_breaker.hpp"
#include "support/db_fixture.hpp"
#include "support/queue_helpers.hpp"

using namespace cafmq;
using namespace cafmq::test;

namespace {

// The process title of `pid` on this machine, "" if there is none.
std::string process_title(int pid) {
  std::ifstream in{"/proc/" + std::to_string(pid) + "/cmdline"};
  return {std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
}

// A call that runs on a thread of its own and reports when it returns.
struct background_call {
  std::mutex mtx;
  std::condition_variable cv;
  bool started = false;
  bool broken = false;
  bool returned_before_break = false;
  std::optional<caf::error> result;

  template <class F>
  std::thread start(F f) {
    return std::thread{[this, f] {
      {
        std::lock_guard<std::mutex> guard{mtx};
        started = true;
      }
      cv.notify_all();
      auto err = f();
      std::lock_guard<std::mutex> guard{mtx};
      returned_before_break = !broken;
      result = std::move(err);
      cv.notify_all();
    }};
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(connection_breaker_tests, db_fixture)

CAF_TEST(a breaker frees a call blocked on a stopped server) {
  auto q = open_poller(tcp_url());
  auto pid = pqxx::nontransaction{q->connection()}
               .exec1("SELECT pg_backend_pid()")[0]
               .as<int>();
  // The pid must be our backend on this machine before we signal it.
  CAF_REQUIRE_NOT_EQUAL(process_title(pid).find(dbname), std::string::npos);
  CAF_REQUIRE_EQUAL(::kill(pid, SIGSTOP), 0);
  auto resume = caf::detail::make_scope_guard([pid] { ::kill(pid, SIGCONT); });
  background_call call;
  auto worker = call.start([&] {
    auto claimed = q->claim(request({"t"}));
    return claimed ? caf::error{} : std::move(claimed.error());
  });
  std::unique_lock<std::mutex> guard{call.mtx};
  call.cv.wait(guard, [&] { return call.started; });
  call.broken = true;
  guard.unlock();
  CAF_CHECK(q->breaker()->break_now());
  guard.lock();
  auto freed = call.cv.wait_for(guard, std::chrono::seconds{60},
                                [&] { return call.result.has_value(); });
  guard.unlock();
  // Resuming the server lets a call that the breaker missed finish.
  ::kill(pid, SIGCONT);
  worker.join();
  CAF_REQUIRE(freed);
  CAF_CHECK(!call.returned_before_break);
  CAF_MESSAGE(render(*call.result));
  CAF_CHECK_EQUAL(code_of(*call.result), errc::database_unavailable);
  // The broken connection stays broken; a new one works.
  auto again = q->claim(request({"t"}));
  CAF_REQUIRE(!again);
  CAF_CHECK_EQUAL(code_of(again.error()), errc::database_unavailable);
  auto fresh = open_poller(tcp_url());
  auto claimed = fresh->claim(request({"t"}));
  CAF_REQUIRE(claimed);
  CAF_CHECK(claimed->tasks.empty());
}

CAF_TEST(a breaker outlives its connection without touching its socket) {
  auto q = poller();
  auto breaker = q->breaker();
  q.reset();
  CAF_CHECK(!breaker->break_now());
}

CAF_TEST_FIXTURE_SCOPE_END()

CAF_TEST(a breaker needs a socket) {
  auto result = connection_breaker::make(-1);
  CAF_REQUIRE(!result);
  CAF_CHECK_EQUAL(code_of(result.error()), errc::invalid_argument);
}
