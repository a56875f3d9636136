// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// Prometheus metrics over HTTP, shared by the runner (runner_config::
// metrics_listen) and `cafmq metrics`: the listen address, the endpoint
// that serves GET /metrics, and the queue-level gauges read from the views
// (cafmq::queue_stats). The queue-level gauges are exported once per
// cluster: only by the process whose own connection holds the session
// advisory lock of sql/queries/metrics_lock.sql; every other exporter
// serves cafmq_queue_exporter 0 and tries again at its next scrape. No CAF
// and no prometheus-cpp headers here.

#include <cstdint>
#include <memory>
#include <string>

#include <caf/expected.hpp>

#include "cafmq/actors/log.hpp"
#include "cafmq/connection_options.hpp"

namespace prometheus {
class Collectable;
} // namespace prometheus

namespace cafmq::actors {

/// The address a metrics endpoint binds, as "HOST:PORT": a bare port or
/// ":PORT" is 127.0.0.1:PORT, "localhost:PORT" too; "HOST:PORT" and
/// "[IPV6]:PORT" as given. `errc::invalid_argument` for anything else
/// (no port, a port above 65535).
caf::expected<std::string> metrics_bind_address(const std::string& listen);

/// An HTTP server answering GET /metrics in Prometheus's text format with
/// what its collectables collect at that moment. Stops when destroyed.
class metrics_endpoint {
public:
  ~metrics_endpoint();

  /// Binds `listen` (see metrics_bind_address) and starts serving.
  static caf::expected<std::unique_ptr<metrics_endpoint>>
  start(const std::string& listen);

  /// The port it listens on (the one taken when asked for port 0).
  std::uint16_t port() const;

  /// The address it listens on, as "HOST:PORT" with the real port.
  std::string address() const;

  /// Serves what `x` collects too; keeps it alive until destroyed.
  void add(std::shared_ptr<prometheus::Collectable> x);

private:
  struct impl;

  explicit metrics_endpoint(std::unique_ptr<impl> ptr);

  std::unique_ptr<impl> impl_;
};

/// The queue-level gauges of the database at `url`, queried at scrape time
/// (read at most once per `interval`) on a connection of their own, opened on
/// the first scrape and again after it broke: depth per channel and state,
/// ready tasks and the oldest ready task's age per channel, tasks finished
/// in the last minute, and cafmq_queue_exporter (1 while this process
/// holds the cluster's metrics lock and exports them). `log` gets a line
/// when this process starts or stops exporting them.
std::shared_ptr<prometheus::Collectable>
make_queue_gauges(std::string url, connection_options opts,
                  std::shared_ptr<const logger> log,
                  std::chrono::milliseconds interval);

} // namespace cafmq::actors
