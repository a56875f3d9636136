// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// A runtime's metrics endpoint (runner_config::metrics_listen), for
// start_runtime: bound before the runtime starts, served once it runs.

#include <memory>

#include <caf/fwd.hpp>

#include "cafmq/actors/detail/metrics.hpp"
#include "cafmq/actors/detail/runtime_metrics.hpp"
#include "cafmq/actors/runner_config.hpp"

namespace cafmq::actors {

class started_attempts;

/// Serves the runtime's metrics (`metrics`, plus the gauges its stats and
/// `started` give when scraped) and the queue-level gauges on `endpoint`
/// until the runtime ends. A detached actor owns the endpoint, so that
/// stopping the server (which waits for a scrape in progress) blocks no
/// scheduler thread; the runtime holds it and ends it when it ends.
void serve_metrics(caf::actor_system& sys, const runtime_actor& runtime,
                   std::unique_ptr<metrics_endpoint> endpoint,
                   runtime_metrics& metrics,
                   std::shared_ptr<started_attempts> started,
                   const runner_config& cfg);

} // namespace cafmq::actors
