// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE executor
#include <caf/test/dsl.hpp>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <caf/all.hpp>

#include "runtime/executor.hpp"

using namespace cafmq;
using namespace cafmq::actors;
using namespace std::chrono_literals;

namespace {

// Counts jobs and lets a test wait until some number of them did something.
struct gate {
  std::mutex mtx;
  std::condition_variable cv;
  int arrived = 0;

  void arrive() {
    std::lock_guard<std::mutex> guard{mtx};
    ++arrived;
    cv.notify_all();
  }

  // True if `n` arrived within `limit` (a bound, not a wait for progress).
  bool wait_for(int n, std::chrono::seconds limit) {
    std::unique_lock<std::mutex> guard{mtx};
    return cv.wait_for(guard, limit, [&] { return arrived >= n; });
  }
};

struct fixture {};

executor::job make_job(int i, std::function<void()> f) {
  return {attempt_ref{uuid::random(), i}, std::move(f)};
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(executor_tests, fixture)

CAF_TEST(handlers that block all get a thread) {
  // Eight jobs that each wait until all eight run: two productive threads
  // alone would never finish them; the monitor must wake the others.
  constexpr int n = 8;
  auto started = std::make_shared<gate>();
  auto finished = std::make_shared<gate>();
  executor exec{n, 2, 1ms};
  std::vector<executor::job> jobs;
  for (int i = 0; i < n; ++i)
    jobs.push_back(make_job(i, [=] {
      started->arrive();
      started->wait_for(n, 30s);
      finished->arrive();
    }));
  exec.post(std::move(jobs));
  CAF_CHECK(finished->wait_for(n, 60s));
  CAF_CHECK_EQUAL(started->arrived, n);
}

CAF_TEST(handlers posted one by one while others block all get a thread) {
  // Each job is posted alone, after the ones before it started and block:
  // the productive threads are busy, and only the monitor can wake a thread
  // for each later job.
  constexpr int n = 6;
  auto started = std::make_shared<gate>();
  auto finished = std::make_shared<gate>();
  executor exec{n, 2, 1ms};
  for (int i = 0; i < n; ++i) {
    std::vector<executor::job> jobs;
    jobs.push_back(make_job(i, [=] {
      started->arrive();
      started->wait_for(n, 30s);
      finished->arrive();
    }));
    exec.post(std::move(jobs));
    CAF_REQUIRE(started->wait_for(i + 1, 30s));
  }
  CAF_CHECK(finished->wait_for(n, 60s));
}

CAF_TEST(short handlers run on the productive threads only) {
  // Nothing counts as blocked (an hour): bursts of short jobs must never
  // run on more than the two productive threads of 16 at once.
  constexpr int n = 2000;
  auto done = std::make_shared<gate>();
  auto running = std::make_shared<std::atomic<int>>(0);
  auto most = std::make_shared<std::atomic<int>>(0);
  executor exec{16, 2, std::chrono::hours{1}};
  for (int round = 0; round < 4; ++round) {
    std::vector<executor::job> jobs;
    for (int i = 0; i < n / 4; ++i)
      jobs.push_back(make_job(i, [=] {
        auto now = ++*running;
        auto seen = most->load();
        while (now > seen && !most->compare_exchange_weak(seen, now)) {
          // retry with the updated value
        }
        auto until = std::chrono::steady_clock::now() + 20us;
        while (std::chrono::steady_clock::now() < until) {
          // a short handler
        }
        --*running;
        done->arrive();
      }));
    exec.post(std::move(jobs));
  }
  CAF_REQUIRE(done->wait_for(n, 60s));
  CAF_MESSAGE("at most " << most->load() << " jobs ran at once");
  CAF_CHECK_LESS_OR_EQUAL(most->load(), 2);
  CAF_CHECK_GREATER_OR_EQUAL(most->load(), 1);
}

CAF_TEST(a job taken out of the queue never runs) {
  // One thread, held by the first job: the second waits and is taken out.
  auto release = std::make_shared<gate>();
  auto first_started = std::make_shared<gate>();
  auto ran = std::make_shared<gate>();
  executor exec{1, 1, std::chrono::hours{1}};
  attempt_ref second{uuid::random(), 1};
  attempt_ref third{uuid::random(), 1};
  std::vector<executor::job> jobs;
  jobs.push_back(make_job(0, [=] {
    first_started->arrive();
    release->wait_for(1, 30s);
    ran->arrive();
  }));
  jobs.push_back({second, [=] {
                    ran->arrive();
                  }});
  jobs.push_back({third, [=] {
                    ran->arrive();
                  }});
  exec.post(std::move(jobs));
  CAF_REQUIRE(first_started->wait_for(1, 30s));
  CAF_CHECK(exec.take(second));
  CAF_CHECK(!exec.take(second));
  release->arrive();
  // The first and the third run; the second never does.
  CAF_CHECK(ran->wait_for(2, 30s));
  CAF_CHECK(!exec.take(third));
  exec.close();
  CAF_CHECK_EQUAL(ran->arrived, 2);
}

CAF_TEST(closing does not wait for a running job and shuts the gate) {
  // The job stands for a handler that ignores its cancel: the executor is
  // closed and destroyed while it runs, and afterwards its thread finds the
  // gate to the actor system shut.
  auto exec = std::make_unique<executor>(1, 1, std::chrono::hours{1});
  auto system_gate = exec->system_gate();
  std::atomic<bool> release{false};
  std::atomic<int> open_after{-1};
  gate entered;
  gate done;
  exec->post({make_job(1, [&] {
    entered.arrive();
    while (!release)
      std::this_thread::sleep_for(1ms);
    open_after = system_gate->enter() ? 1 : 0;
    done.arrive();
  })});
  CAF_REQUIRE(entered.wait_for(1, 60s));
  exec->close();
  exec.reset();
  release = true;
  CAF_REQUIRE(done.wait_for(1, 60s));
  CAF_CHECK_EQUAL(open_after.load(), 0);
}

CAF_TEST(closing waits for a call inside the gate) {
  executor exec{0};
  auto system_gate = exec.system_gate();
  auto inside = system_gate->enter();
  CAF_REQUIRE(inside);
  std::atomic<bool> closed{false};
  std::thread closer{[&] {
    exec.close();
    closed = true;
  }};
  // Whenever this runs, the close cannot have passed the call inside.
  CAF_CHECK(!closed);
  inside.unlock();
  closer.join();
  CAF_CHECK(closed);
  CAF_CHECK(!system_gate->enter());
}

CAF_TEST_FIXTURE_SCOPE_END()
