// SPDX-License-Identifier: BSD-3-Clause
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace cafmq {

/// Why a running attempt was asked to stop.
enum class cancel_reason {
  none,
  /// cancel(id) was called.
  cancelled,
  /// The attempt ran past the task's per-attempt timeout.
  timeout,
  /// The attempt ran past the task's absolute deadline.
  deadline,
  /// The runner shuts down and its shutdown timeout passed.
  shutdown,
  /// The runner no longer owns the attempt (its lease was lost).
  lost,
};

/// Returns the enumerator's name, e.g. "timeout".
std::string to_string(cancel_reason x);

/// The cancellation token of one attempt. Handlers poll `cancelled()` or
/// register a callback; the runtime fires it. The first reason wins.
/// Thread-safe.
class cancellation {
public:
  /// True once the token fired, whatever the reason.
  bool cancelled() const noexcept {
    return reason_.load() != cancel_reason::none;
  }

  /// Why the token fired; `cancel_reason::none` until it does.
  cancel_reason reason() const noexcept {
    return reason_.load();
  }

  /// Runs `f` once when the token fires; at once if it already has. `f` runs
  /// on the thread that fires the token: keep it short.
  void on_cancel(std::function<void()> f);

  /// Fires the token; returns false if it had fired before.
  bool cancel(cancel_reason why);

private:
  std::atomic<cancel_reason> reason_{cancel_reason::none};
  std::mutex mtx_;
  std::vector<std::function<void()>> callbacks_;
};

} // namespace cafmq
