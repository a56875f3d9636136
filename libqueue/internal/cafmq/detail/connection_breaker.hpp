// SPDX-License-Identifier: BSD-3-Clause
#pragma once

#include <memory>
#include <mutex>

#include <caf/expected.hpp>

namespace cafmq {

/// Breaks one connection's socket from any thread, so that a call blocked on
/// a server that stopped answering returns.
///
/// Intended use: the owner of a connection gives its breaker to a watchdog
/// thread and tells it when each call starts and ends. When a call runs past
/// its bound, the watchdog calls `break_now()`; the blocked call returns
/// `errc::database_unavailable`, and the owner drops the connection and opens
/// a new one. Timeouts and keepalives cannot do this for a server that
/// acknowledges every packet but never answers.
///
/// The breaker holds a duplicate of the socket: the descriptor it shuts down
/// can never be one that the system reused for another file after the
/// connection closed its own.
class connection_breaker {
public:
  /// Watches `socket`, e.g. `pqxx::connection_base::sock()`; the caller's
  /// descriptor stays its own.
  static caf::expected<std::shared_ptr<connection_breaker>> make(int socket);

  ~connection_breaker();

  connection_breaker(const connection_breaker&) = delete;

  connection_breaker& operator=(const connection_breaker&) = delete;

  /// Shuts the socket down for reading and writing: a call blocked on it
  /// returns with a connection error, and so does every later call. Returns
  /// whether it did; false after `release()`. Thread-safe.
  bool break_now() noexcept;

  /// Lets go of the socket; `break_now()` does nothing afterwards. The owner
  /// calls it when it closes the connection, so that the duplicate does not
  /// keep the socket open. Thread-safe.
  void release() noexcept;

private:
  explicit connection_breaker(int fd) noexcept;

  std::mutex mtx_;
  int fd_;
};

} // namespace cafmq
