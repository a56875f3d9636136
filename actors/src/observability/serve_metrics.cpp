// SPDX-License-Identifier: BSD-3-Clause
#include "observability/serve_metrics.hpp"

#include <algorithm>
#include <optional>

#include <caf/all.hpp>

#include "cafmq/actors/detail/database.hpp"
#include "runtime/started_attempts.hpp"
#include "runtime/thread_name.hpp"

namespace cafmq::actors {

namespace {

struct metrics_owner_state {
  std::unique_ptr<metrics_endpoint> endpoint;
  static inline const char* name = "cafmq.metrics";
};

// Spawn arguments are copied: the endpoint comes in a box.
using endpoint_box = std::shared_ptr<std::unique_ptr<metrics_endpoint>>;

caf::behavior metrics_owner(caf::stateful_actor<metrics_owner_state>* self,
                            endpoint_box box) {
  name_this_thread("cafmq.metrics");
  self->state.endpoint = std::move(*box);
  return {
    [=](stop_atom) { self->quit(); },
  };
}

} // namespace

void serve_metrics(caf::actor_system& sys, const runtime_actor& runtime,
                   std::unique_ptr<metrics_endpoint> endpoint,
                   runtime_metrics& metrics,
                   std::shared_ptr<started_attempts> started,
                   const runner_config& cfg) {
  // The gauges the runtime keeps (held, channels) are asked for when
  // scraped, with a short bound; its counters are the metrics' own.
  auto timeout = std::min(caf::timespan{cfg.request_timeout},
                          caf::timespan{std::chrono::seconds{1}});
  auto sample
    = [&sys, addr = runtime.address(), started, timeout,
       slots = cfg.max_concurrency]() -> std::optional<runtime_sample> {
    auto rt = caf::actor_cast<runtime_actor>(
      caf::actor_cast<caf::strong_actor_ptr>(addr));
    if (!rt)
      return std::nullopt;
    std::optional<runtime_sample> result;
    caf::scoped_actor self{sys};
    self->request(rt, timeout, stats_atom::value)
      .receive(
        [&](const runner_stats& x) {
          result = runtime_sample{x.running, 0, x.channels, slots};
        },
        [](caf::error&) {});
    if (result)
      result->running = static_cast<std::int64_t>(started->size());
    return result;
  };
  endpoint->add(metrics.collectable(std::move(sample)));
  auto log = std::make_shared<logger>(cfg.log, cfg.min_log_level);
  // A session lock: behind a pooler, on the direct listening URL.
  endpoint->add(make_queue_gauges(
    cfg.listen_url.empty() ? cfg.database_url : cfg.listen_url,
    connection_for(cfg, "metrics"), log, cfg.metrics_queue_interval));
  (*log)(log_level::info, "serving metrics",
         {{"address", endpoint->address()}, {"path", "/metrics"}});
  auto owner = sys.spawn<caf::detached>(
    metrics_owner,
    std::make_shared<std::unique_ptr<metrics_endpoint>>(std::move(endpoint)));
  runtime->attach_functor(
    [owner](const caf::error&) { caf::anon_send(owner, stop_atom::value); });
}

} // namespace cafmq::actors
