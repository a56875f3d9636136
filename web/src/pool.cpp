// SPDX-License-Identifier: BSD-3-Clause
#include "pool.hpp"

#include <pqxx/pqxx>

namespace cafmq::web {

connection_pool::connection_pool(std::string url, connection_options opts,
                                 int max)
  : url_(std::move(url)), opts_(std::move(opts)), max_(std::max(1, max)) {
  // nop
}

caf::expected<connection_pool::connection_ptr>
connection_pool::acquire(std::chrono::milliseconds wait) {
  {
    std::unique_lock<std::mutex> guard{mtx_};
    if (!cv_.wait_for(guard, wait, [this] { return in_use_ < max_; }))
      return make_error(errc::database_unavailable,
                        "every dashboard connection is busy; try again");
    ++in_use_;
    if (!idle_.empty()) {
      auto conn = std::move(idle_.back());
      idle_.pop_back();
      return conn;
    }
  }
  // Connecting takes a while: outside the lock, with the slot taken.
  auto conn = open_connection(url_, opts_);
  if (!conn)
    release(nullptr, false);
  return conn;
}

void connection_pool::release(connection_ptr conn, bool keep) {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    --in_use_;
    if (conn && keep && conn->is_open())
      idle_.push_back(std::move(conn));
  }
  cv_.notify_one();
}

} // namespace cafmq::web
