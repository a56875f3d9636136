// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// The task handlers of cafmq-e2e that more than one subcommand runs: the
// ledgers they record in and the handler that works until its cancel.

#include <chrono>
#include <string>

#include <caf/error.hpp>

#include "cafmq/current_task.hpp"

namespace cafmq::e2e {

/// A file of lines that handlers append to with one write each (O_APPEND):
/// whole lines, kept by the kernel when the process dies right after.
/// A handler keeps it in a static local: opened once, by the first line.
class ledger {
public:
  explicit ledger(const std::string& path);

  /// Appends "ID ATTEMPT REST".
  caf::error add(const current_task& task, const std::string& rest);

private:
  int fd_;
};

/// Works until the attempt is cancelled, looking every `poll`.
void until_cancelled(const current_task& task, std::chrono::microseconds poll
                                               = std::chrono::milliseconds{1});

/// The error of a handler that stopped for its cancel: "stopped: REASON".
caf::error stopped(const current_task& task);

/// "wait_cancel": works until it is cancelled.
caf::error wait_cancel(current_task& task);

} // namespace cafmq::e2e
