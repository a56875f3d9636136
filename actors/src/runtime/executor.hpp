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
//
// The threads are the executor's own, not the actor system's: neither the
// runtime's stop nor the system's destructor waits for a handler that
// ignores its cancel. A handler thread reaches the actor system only
// through the executor's gate (`enter`), which `close` shuts: after that,
// a thread left running never touches a system that may be gone.

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <shared_mutex>
#include <vector>

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
  executor(std::size_t threads, std::size_t productive = 0,
           std::chrono::microseconds blocked_after
           = std::chrono::microseconds{250});

  /// Closes the queue: threads finish their current job and end; jobs that
  /// have not started are dropped.
  ~executor();

  /// The gate between handler threads and the actor system: open until
  /// `close`. A job holds it open while it uses the system.
  class gate {
  public:
    /// Holds the gate open; empty (false) once it is closed.
    std::shared_lock<std::shared_mutex> enter() {
      std::shared_lock<std::shared_mutex> guard{mtx_};
      if (closed_)
        guard.unlock();
      return guard;
    }

    /// Waits for the calls inside, then closes.
    void close() {
      std::unique_lock<std::shared_mutex> guard{mtx_};
      closed_ = true;
    }

  private:
    std::shared_mutex mtx_;
    bool closed_ = false;
  };

  /// This executor's gate.
  std::shared_ptr<gate> system_gate() const;

  /// Queues jobs in order.
  void post(std::vector<job> xs);

  /// Ends the threads after their current job; drops jobs not started;
  /// closes the gate (waiting for calls inside it).
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
