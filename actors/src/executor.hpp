// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// Threads for handlers that may block. Jobs wait in one shared queue; a
// thread that finishes a job takes the next one without going back to the
// pool, so a busy runner hands work over without waking threads (a CAF
// detached actor sleeps after every message). The actor system waits for
// these threads at shutdown, as it does for detached actors.
//
// Not every thread is woken for a burst of jobs: as many run as there are
// cores ("productive" threads), and a thread whose job has run for longer
// than `blocked_after` no longer counts. A monitor thread checks every
// `blocked_after` while jobs wait and wakes at least as many threads as are
// blocked, so handlers that wait (I/O, sleeps) still get every thread within
// a few milliseconds, and short handlers run back to back on a few threads
// without a futex storm over the queue.

#include <chrono>
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

  /// Runs jobs on `threads` threads; `productive` of them are kept busy
  /// before more are woken (0: the number of cores, at least 2). With no
  /// threads, jobs wait until `run_queued` (deterministic tests run the
  /// production jobs this way, on the test's thread).
  executor(caf::actor_system& sys, std::size_t threads,
           std::size_t productive = 0,
           std::chrono::microseconds blocked_after
           = std::chrono::microseconds{250});

  /// Closes the queue: threads finish their current job and end; jobs that
  /// have not started are dropped.
  ~executor();

  /// Queues jobs in order.
  void post(std::vector<job> xs);

  /// Ends the threads after their current job; drops jobs not started.
  void close();

  /// Runs every queued job on the calling thread, in order; returns how
  /// many ran.
  std::size_t run_queued();

  /// Jobs waiting for a thread.
  std::size_t queued() const;

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
