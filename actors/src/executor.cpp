#include "executor.hpp"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include <caf/actor_system.hpp>

namespace cafmq::actors {

struct executor::shared {
  std::mutex mtx;
  std::condition_variable cv;
  std::deque<job> jobs;
  bool closed = false;
};

executor::executor(caf::actor_system& sys, std::size_t threads)
  : st_(std::make_shared<shared>()) {
  for (std::size_t i = 0; i < threads; ++i) {
    sys.inc_detached_threads();
    std::thread{[st = st_, &sys] {
      sys.thread_started();
      for (;;) {
        job next;
        {
          std::unique_lock<std::mutex> guard{st->mtx};
          st->cv.wait(guard, [&] { return st->closed || !st->jobs.empty(); });
          if (st->closed)
            break;
          next = std::move(st->jobs.front());
          st->jobs.pop_front();
        }
        next.run();
      }
      sys.thread_terminates();
      sys.dec_detached_threads();
    }}.detach();
  }
}

executor::~executor() {
  close();
}

void executor::close() {
  std::deque<job> dropped;
  std::lock_guard<std::mutex> guard{st_->mtx};
  st_->closed = true;
  dropped.swap(st_->jobs);
  st_->cv.notify_all();
}

void executor::post(job x) {
  std::lock_guard<std::mutex> guard{st_->mtx};
  st_->jobs.push_back(std::move(x));
  st_->cv.notify_one();
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

std::vector<attempt_ref> executor::take_all() {
  std::vector<attempt_ref> result;
  std::lock_guard<std::mutex> guard{st_->mtx};
  for (auto& x : st_->jobs)
    result.push_back(x.ref);
  st_->jobs.clear();
  return result;
}

} // namespace cafmq::actors
