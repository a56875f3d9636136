// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// `cafmq metrics --listen ADDR`: serves the queue-level gauges in
// Prometheus's text format (see tools/metrics_command.cpp).

#include <chrono>
#include <string>

namespace cafmq::cli {

/// Serves the queue-level gauges of the database at `database_url` on
/// GET /metrics at `listen` (PORT or :PORT binds 127.0.0.1, HOST:PORT binds
/// HOST) until SIGINT or SIGTERM. Like a runner's, they are exported only
/// while this process holds the cluster's metrics lock (else it serves
/// cafmq_queue_exporter 0). Returns the exit code: 0 after a signal, 1 when
/// the database cannot be read or the address cannot be bound.
int run_metrics_server(const std::string& database_url,
                       const std::string& listen,
                       std::chrono::milliseconds interval);

} // namespace cafmq::cli
