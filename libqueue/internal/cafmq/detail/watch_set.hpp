// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// Tasks followed live through one connection: `cafmq::watch` follows one,
// the runtime's watch service every task any of its watchers follows.
//
// The set registers its tasks in cafmq.watches (so that their changes are
// published on cafmq_status), LISTENs, and turns the notifications into
// each task's steps, in commit order; the row is read again for the tasks
// that were notified, for reservations at their deadline, and for every
// task each `refresh`, in case a notification was missed. One statement
// reads all the rows that are due.

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include <caf/expected.hpp>

#include "cafmq/task_status.hpp"
#include "cafmq/uuid.hpp"

namespace pqxx {
class connection_base;
} // namespace pqxx

namespace cafmq::detail {

class watch_set {
public:
  /// Called with a task's current state first, then with each change. A
  /// final state or an error is the task's last report: it has left the set.
  using report = std::function<void(const uuid&, caf::expected<task_status>)>;

  /// A set that reads every task at least every `refresh`; `poll` needs a
  /// connection (`attach`).
  explicit watch_set(std::chrono::milliseconds refresh
                     = std::chrono::seconds{1});

  ~watch_set();

  /// Follows `id` from the next `poll` on; nothing if it is followed.
  void add(const uuid& id);

  /// Stops following `id` (its registration goes at the next `poll`).
  void remove(const uuid& id);

  /// Registers the new tasks and reports their state, then waits up to
  /// `max_wait` (less for a reservation's deadline or a refresh) for
  /// notifications and reports what changed. Throws what the connection
  /// throws; the set then needs `detach` and `attach`.
  void poll(std::chrono::microseconds max_wait, const report& f);

  /// Leaves the connection (before it is closed); `poll` needs `attach`.
  void detach();

  /// Listens on `conn`, which must stay open until `detach` or the set's
  /// end. On a new connection every task is registered again and read at
  /// the next `poll`, reporting only what changed.
  void attach(pqxx::connection_base& conn);

  /// The state last reported for `id`; none before its first read.
  std::optional<task_status> last(const uuid& id) const;

  /// Tasks followed.
  std::size_t size() const;

  bool empty() const {
    return size() == 0;
  }

  watch_set(const watch_set&) = delete;
  watch_set& operator=(const watch_set&) = delete;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace cafmq::detail
