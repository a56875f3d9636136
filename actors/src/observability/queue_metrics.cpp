// SPDX-License-Identifier: BSD-3-Clause
#include <chrono>
#include <mutex>
#include <optional>
#include <vector>

#include <pqxx/pqxx>
#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include "cafmq/actors/detail/metrics.hpp"
#include "cafmq/admin.hpp"
#include "cafmq/error.hpp"
#include "cafmq/sql.hpp"

namespace cafmq::actors {

namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

MetricFamily gauge(std::string name, std::string help) {
  return {std::move(name), std::move(help), MetricType::Gauge, {}};
}

void add(MetricFamily& family, std::vector<ClientMetric::Label> labels,
         double value) {
  ClientMetric x;
  x.label = std::move(labels);
  x.gauge.value = value;
  family.metric.push_back(std::move(x));
}

class queue_gauges : public prometheus::Collectable {
public:
  queue_gauges(std::string url, connection_options opts,
               std::shared_ptr<const logger> log,
               std::chrono::milliseconds interval)
    : url_(std::move(url)), opts_(std::move(opts)), log_(std::move(log)),
      interval_(interval) {
    // nop
  }

  std::vector<MetricFamily> Collect() const override {
    std::lock_guard<std::mutex> guard{mtx_};
    auto now = std::chrono::steady_clock::now();
    // Scrapes closer together than the interval get the last answer.
    // A process that does not export them tries the lock at every scrape,
    // so it takes over within one when the exporter goes.
    if (!last_ || !holding_ || now - last_at_ >= interval_) {
      last_ = collect();
      last_at_ = now;
    }
    return *last_;
  }

private:
  // Takes the lock if nobody holds it; false without it.
  bool exporting() const {
    if (!conn_) {
      auto opened = open_connection(url_, opts_);
      if (!opened) {
        report(false, render(opened.error()));
        return false;
      }
      conn_ = std::move(*opened);
    }
    if (!holding_) {
      pqxx::nontransaction tx{*conn_};
      if (tx.exec1(sql::metrics_lock)[0].as<bool>())
        report(true, "");
      else
        report(false, "another process exports them");
    }
    return holding_;
  }

  void report(bool now_holding, const std::string& why) const {
    if (now_holding == holding_ && why == why_)
      return;
    if (now_holding)
      (*log_)(log_level::info, "exporting the queue-level metrics");
    else
      (*log_)(holding_ ? log_level::warning : log_level::info,
              "not exporting the queue-level metrics", {{"reason", why}});
    holding_ = now_holding;
    why_ = why;
  }

  std::vector<MetricFamily> collect() const {
    auto exporter = gauge("cafmq_queue_exporter",
                          "1 while this process exports the queue-level "
                          "gauges (one process per cluster does)");
    std::vector<MetricFamily> result;
    try {
      if (exporting()) {
        auto stats = queue_stats(*conn_, false);
        if (!stats)
          throw std::runtime_error(render(stats.error()));
        result = families(*stats);
      }
    } catch (const std::exception& e) {
      // The lock went with the connection, if it broke; the next scrape
      // opens another one.
      conn_.reset();
      result.clear();
      report(false, e.what());
    }
    add(exporter, {}, holding_ ? 1 : 0);
    result.push_back(std::move(exporter));
    return result;
  }

  static std::vector<MetricFamily>
  families(const std::vector<queue_stat>& stats) {
    auto depth
      = gauge("cafmq_queue_depth",
              "Live tasks (uncommitted, waiting, pending, running) per "
              "channel and state");
    auto ready = gauge("cafmq_queue_ready",
                       "Pending tasks that may run now, per channel");
    auto age = gauge("cafmq_queue_oldest_pending_age_seconds",
                     "How long the oldest ready task of a channel has waited");
    auto finished = gauge("cafmq_queue_finished_last_minute",
                          "Tasks that reached a final state in the last "
                          "minute, per channel and state");
    for (auto& x : stats) {
      auto state = to_string(x.state);
      if (is_final(x.state)) {
        add(finished, {{"channel", x.channel_name}, {"state", state}},
            static_cast<double>(x.last_minute));
        continue;
      }
      add(depth, {{"channel", x.channel_name}, {"state", state}},
          static_cast<double>(x.tasks));
      if (x.state != task_state::pending)
        continue;
      add(ready, {{"channel", x.channel_name}}, static_cast<double>(x.ready));
      add(age, {{"channel", x.channel_name}},
          x.oldest_pending_age
            ? std::chrono::duration<double>(*x.oldest_pending_age).count()
            : 0.0);
    }
    return {std::move(depth), std::move(ready), std::move(age),
            std::move(finished)};
  }

  std::string url_;
  connection_options opts_;
  std::shared_ptr<const logger> log_;
  std::chrono::milliseconds interval_;
  mutable std::mutex mtx_;
  mutable std::shared_ptr<pqxx::connection_base> conn_;
  mutable bool holding_ = false;
  mutable std::string why_;
  mutable std::optional<std::vector<MetricFamily>> last_;
  mutable std::chrono::steady_clock::time_point last_at_;
};

} // namespace

std::shared_ptr<prometheus::Collectable>
make_queue_gauges(std::string url, connection_options opts,
                  std::shared_ptr<const logger> log,
                  std::chrono::milliseconds interval) {
  return std::make_shared<queue_gauges>(std::move(url), std::move(opts),
                                        std::move(log), interval);
}

} // namespace cafmq::actors
