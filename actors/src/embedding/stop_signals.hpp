#pragma once

// SIGINT and SIGTERM as bytes on a pipe, for runner::wait_for_signal. The
// handler only writes the signal's number to the pipe (async-signal-safe);
// everything else happens on ordinary threads.

#include <csignal>

#include <caf/error.hpp>

namespace cafmq::actors {

class stop_signals {
public:
  stop_signals() = default;

  stop_signals(const stop_signals&) = delete;
  stop_signals& operator=(const stop_signals&) = delete;

  /// Restores the previous handlers and signal mask, closes the pipe.
  ~stop_signals();

  /// Takes over the signals: installs the handlers and unblocks both
  /// signals in the calling thread, so a program that blocked them
  /// everywhere gets them here. An error when another instance holds them
  /// or the pipe cannot be made.
  caf::error install();

  /// Blocks until a signal or wake() arrives; returns the signal's number,
  /// or 0 for wake().
  int next();

  /// Makes next() return 0; from any thread.
  void wake();

private:
  bool installed_ = false;
  int fds_[2] = {-1, -1};
  struct sigaction old_int_ = {};
  struct sigaction old_term_ = {};
  sigset_t old_mask_ = {};
};

} // namespace cafmq::actors
