// SPDX-License-Identifier: BSD-3-Clause
#include "runtime/executor.hpp"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace cafmq::actors {

using clock_type = std::chrono::steady_clock;

struct executor::shared {
  std::mutex mtx;
  // Threads without work wait here for a wake-up ticket.
  std::condition_variable cv;
  // The monitor waits here while no job waits.
  std::condition_variable monitor_cv;
  std::deque<job> jobs;
  bool closed = false;
  // Start of the job each thread runs; time_point{} while it has none.
  std::vector<clock_type::time_point> started;
  std::size_t sleeping = 0;
  // Wake-ups granted to sleeping threads that have not taken them yet.
  std::size_t tickets = 0;
  std::size_t productive;
  clock_type::duration blocked_after;
  std::shared_ptr<executor::gate> gate = std::make_shared<executor::gate>();

  // Whether the monitor has anything to watch: jobs wait, and threads sleep
  // that no wake-up was granted to. A thread sleeps only when the queue is
  // empty, so this turns true only when jobs are posted (`post`). Call with
  // the lock held.
  bool may_need_monitor() const {
    return !jobs.empty() && sleeping > tickets;
  }

  // Wakes sleeping threads for waiting jobs: up to `productive` threads
  // that are awake and not blocked, and (from the monitor) at least as many
  // as are blocked. Call with the lock held.
  void wake(bool from_monitor) {
    if (jobs.empty() || sleeping <= tickets)
      return;
    auto now = clock_type::now();
    std::size_t running = 0;
    std::size_t blocked = 0;
    for (auto& t : started)
      if (t != clock_type::time_point{}) {
        ++running;
        if (now - t >= blocked_after)
          ++blocked;
      }
    auto awake = started.size() - sleeping + tickets;
    auto useful = awake - blocked;
    if (useful >= productive)
      return;
    auto wanted = productive - useful;
    if (from_monitor)
      wanted = std::max(wanted, blocked);
    // Awake threads between jobs take some of the waiting ones.
    auto idle_awake = awake - running;
    auto waiting = jobs.size() > idle_awake ? jobs.size() - idle_awake : 0;
    auto n = std::min({wanted, waiting, sleeping - tickets});
    tickets += n;
    for (std::size_t i = 0; i < n; ++i)
      cv.notify_one();
  }
};

executor::executor(std::size_t threads, std::size_t productive,
                   std::chrono::microseconds blocked_after)
  : st_(std::make_shared<shared>()) {
  if (productive == 0)
    productive = std::max(2u, std::thread::hardware_concurrency());
  st_->productive = productive;
  st_->blocked_after = blocked_after;
  st_->started.resize(threads);
  // Threads start asleep (counted before they run): a burst posted while
  // they start wakes only the ones it needs.
  st_->sleeping = threads;
  for (std::size_t i = 0; i < threads; ++i) {
    std::thread{[st = st_, i] {
      std::unique_lock<std::mutex> guard{st->mtx};
      auto sleep = [&] {
        st->cv.wait(guard, [&] { return st->closed || st->tickets > 0; });
        --st->sleeping;
        if (st->tickets > 0)
          --st->tickets;
      };
      sleep();
      while (!st->closed) {
        if (!st->jobs.empty()) {
          auto next = std::move(st->jobs.front());
          st->jobs.pop_front();
          st->started[i] = clock_type::now();
          st->wake(false);
          guard.unlock();
          next.run();
          next.run = nullptr; // its captures go outside the lock
          guard.lock();
          st->started[i] = clock_type::time_point{};
          continue;
        }
        // Only an empty queue puts a thread to sleep.
        ++st->sleeping;
        sleep();
      }
    }}.detach();
  }
  if (threads == 0)
    return;
  // The monitor: while jobs wait for a sleeping thread that no wake-up was
  // granted to, every `blocked_after` it wakes threads for those whose
  // handlers block.
  std::thread{[st = st_] {
    std::unique_lock<std::mutex> guard{st->mtx};
    while (!st->closed) {
      if (!st->may_need_monitor()) {
        st->monitor_cv.wait(guard);
        continue;
      }
      st->monitor_cv.wait_for(guard, st->blocked_after);
      if (!st->closed)
        st->wake(true);
    }
  }}.detach();
}

executor::~executor() {
  close();
}

void executor::close() {
  std::deque<job> dropped;
  {
    std::lock_guard<std::mutex> guard{st_->mtx};
    st_->closed = true;
    dropped.swap(st_->jobs);
    st_->cv.notify_all();
    st_->monitor_cv.notify_all();
  }
  st_->gate->close();
}

std::shared_ptr<executor::gate> executor::system_gate() const {
  return st_->gate;
}

void executor::post(std::vector<job> xs) {
  if (xs.empty())
    return;
  std::lock_guard<std::mutex> guard{st_->mtx};
  auto needed_before = st_->may_need_monitor();
  for (auto& x : xs)
    st_->jobs.push_back(std::move(x));
  st_->wake(false);
  // Jobs that the woken threads take need no monitor: waking it for each
  // would cost a busy runner a context switch per job.
  if (!needed_before && st_->may_need_monitor())
    st_->monitor_cv.notify_one();
}

bool executor::take(const attempt_ref& ref) {
  job taken;
  std::lock_guard<std::mutex> guard{st_->mtx};
  for (auto i = st_->jobs.begin(); i != st_->jobs.end(); ++i)
    if (i->ref == ref) {
      taken = std::move(*i);
      st_->jobs.erase(i);
      return true;
    }
  return false;
}

std::size_t executor::run_queued() {
  std::size_t n = 0;
  for (;;) {
    job next;
    {
      std::lock_guard<std::mutex> guard{st_->mtx};
      if (st_->closed || st_->jobs.empty())
        return n;
      next = std::move(st_->jobs.front());
      st_->jobs.pop_front();
    }
    next.run();
    ++n;
  }
}

std::size_t executor::queued() const {
  std::lock_guard<std::mutex> guard{st_->mtx};
  return st_->jobs.size();
}

std::vector<attempt_ref> executor::take_all() {
  std::vector<attempt_ref> result;
  std::lock_guard<std::mutex> guard{st_->mtx};
  for (auto& x : st_->jobs)
    result.push_back(x.ref);
  st_->jobs.clear();
  return result;
}

} // namespace cafmq::actors
