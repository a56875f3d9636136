#pragma once

// Threads for handlers that may block. Jobs wait in one shared queue; a
// thread that finishes a job takes the next one without going back to the
// pool, so a busy runner hands work over without waking threads (a CAF
// detached actor sleeps after every message). The actor system waits for
// these threads at shutdown, as it does for detached actors.

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include <caf/fwd.hpp>

#include "cafmq/claimed_task.hpp"

namespace cafmq::actors {

class executor {
public:
  struct job {
    attempt_ref ref;
    std::function<void()> run;
  };

  executor(caf::actor_system& sys, std::size_t threads);

  /// Closes the queue: threads finish their current job and end; jobs that
  /// have not started are dropped.
  ~executor();

  void post(job x);

  /// Ends the threads after their current job; drops jobs not started.
  void close();

  /// Takes every job that has not started out of the queue.
  std::vector<attempt_ref> take_all();

  /// Takes the job of `ref` out of the queue; false if it started already.
  bool take(const attempt_ref& ref);

  executor(const executor&) = delete;
  executor& operator=(const executor&) = delete;

private:
  struct shared;
  std::shared_ptr<shared> st_;
};

} // namespace cafmq::actors
