// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// Process isolation: the handlers of tasks marked `isolated` run in worker
// processes that the runner starts and supervises, so a handler that
// aborts or segfaults takes down only its worker process. The runner fails
// that process's attempts at once with the signal recorded (they run again
// while attempts are left) and starts the process again, with a backoff
// while it keeps dying; the runner and its other tasks go on.
//
// A worker process is this program started again (or runner_config's
// worker_command): it joins the runner over a loopback gate with a secret
// that is fresh for each runner, like a remote worker node (worker.hpp),
// and offers the isolated tasks. The program calls serve_worker_process at
// the top of main, once its runner_config exists and before it does
// anything a worker process must not do again (migrate, spawn, start a
// runner):
//
//   int main(int argc, char** argv) {
//     auto cfg = make_config(argc, argv);      // the runner's config
//     cafmq::actors::serve_worker_process(cfg); // returns unless a worker
//     auto r = cafmq::actors::runner::start(cfg);
//     ...
//
// The runner exports CAFMQ_WORKER_PROCESS (and the secret) to its worker
// processes; a runner started in a process that has it refuses to start,
// so a program that forgot the call cannot start runners recursively.
// Worker processes die with the thread of their runner that reaps them
// (PR_SET_PDEATHSIG), and leave when their runner stops or is lost. The
// runner reaps them with waitpid: a program that sets SIGCHLD to SIG_IGN
// loses their exit status.

#include "cafmq/actors/runner_config.hpp"

namespace cafmq::actors {

/// In a worker process that a runner started: serves the isolated tasks of
/// `cfg.tasks` until the runner lets it go, then exits the process (status
/// 0 when let go, 1 when the runner was lost or refused it). In any other
/// process: returns at once.
void serve_worker_process(const runner_config& cfg);

/// True in a worker process that a runner started.
bool is_worker_process();

} // namespace cafmq::actors
