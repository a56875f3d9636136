// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/actors/detail/runtime_metrics.hpp"

#include <array>
#include <atomic>
#include <iterator>
#include <mutex>
#include <unordered_map>
#include <utility>

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>

namespace cafmq::actors {

using prometheus::Counter;
using prometheus::Family;
using prometheus::Histogram;

namespace {

// Seconds, from a millisecond to a quarter of an hour.
const Histogram::BucketBoundaries pickup_buckets{
  0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
  1,     2.5,   5,     10,   30,    60,   300, 900};

// Seconds, from 100 microseconds (no-op handlers) to half an hour.
const Histogram::BucketBoundaries duration_buckets{
  0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5,
  1,      5,      10,    30,    60,   300,  1800};

Family<Counter>& counter(prometheus::Registry& reg, const char* name,
                         const char* help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(reg);
}

// The outcome counters (name, help), by `runtime_metrics::ending` in its
// order: each written outcome counts in exactly one.
constexpr std::pair<const char*, const char*> ending_counters[] = {
  {"cafmq_tasks_completed_total",
   "Attempts whose handlers succeeded (outcome written)"},
  {"cafmq_tasks_failed_total",
   "Attempts that failed and ended their task (no attempts left or not "
   "retryable; outcome written)"},
  {"cafmq_tasks_retried_total",
   "Attempts that failed with attempts left: the task runs again (outcome "
   "written)"},
  {"cafmq_tasks_cancelled_total",
   "Attempts ended by a cancel of their task (outcome written)"},
  {"cafmq_tasks_released_total",
   "Claimed attempts given back unstarted or interrupted by this runner's "
   "stop (pending again, the attempt not counted)"},
};
static_assert(std::size(ending_counters)
              == static_cast<std::size_t>(runtime_metrics::ending::released)
                   + 1);

std::array<Family<Counter>*, std::size(ending_counters)>
make_endings(prometheus::Registry& reg) {
  std::array<Family<Counter>*, std::size(ending_counters)> result;
  for (std::size_t i = 0; i < result.size(); ++i)
    result[i]
      = &counter(reg, ending_counters[i].first, ending_counters[i].second);
  return result;
}

} // namespace

struct runtime_metrics::task_instruments {
  Counter* claimed;
  // By `ending`, in its order.
  std::array<Counter*, std::size(ending_counters)> ended;
  Histogram* pickup;
  Histogram* duration;
};

struct runtime_metrics::impl {
  std::shared_ptr<prometheus::Registry> registry
    = std::make_shared<prometheus::Registry>();
  Family<Counter>& claimed
    = counter(*registry, "cafmq_tasks_claimed_total",
              "Attempts this runner claimed, per task name");
  std::array<Family<Counter>*, std::size(ending_counters)> endings
    = make_endings(*registry);
  Family<Histogram>& pickup
    = prometheus::BuildHistogram()
        .Name("cafmq_pickup_latency_seconds")
        .Help("How long a task was ready (past its run_at) when claimed; "
              "one claimed task in 16, chosen by its id")
        .Register(*registry);
  Family<Histogram>& duration = prometheus::BuildHistogram()
                                  .Name("cafmq_handler_duration_seconds")
                                  .Help("How long handlers ran, per task name")
                                  .Register(*registry);
  Counter& claims = counter(*registry, "cafmq_claims_total",
                            "Claim statements that returned, empty or not")
                      .Add({});
  Counter& lost = counter(*registry, "cafmq_leases_lost_total",
                          "Attempts this runner lost: a lease renewal found "
                          "them no longer its own")
                    .Add({});
  Counter& cancels_at_renewal
    = counter(*registry, "cafmq_cancels_at_renewal_total",
              "Cancels that reached running attempts through a lease "
              "renewal (their notification was missed)")
        .Add({});
  Counter& restarts = counter(*registry, "cafmq_actor_restarts_total",
                              "Actors of this runner's runtime that its "
                              "supervisor restarted after they failed")
                        .Add({});
  prometheus::Gauge& connections
    = prometheus::BuildGauge()
        .Name("cafmq_connections")
        .Help("Database connections this runner holds open")
        .Register(*registry)
        .Add({});
  // An endpoint serves these (collectable was called): histograms count.
  std::atomic<bool> served{false};
  // Made in the constructor, read-only after: found without a lock.
  std::unordered_map<std::string, task_instruments> known;
  mutable std::mutex mtx;
  std::unordered_map<std::string, task_instruments> late;

  task_instruments make(const std::string& name) {
    prometheus::Labels labels{{"task", name}};
    task_instruments result{&claimed.Add(labels),
                            {},
                            &pickup.Add(labels, pickup_buckets),
                            &duration.Add(labels, duration_buckets)};
    for (std::size_t i = 0; i < endings.size(); ++i)
      result.ended[i] = &endings[i]->Add(labels);
    return result;
  }
};

runtime_metrics::runtime_metrics(const std::vector<std::string>& names)
  : impl_(std::make_unique<impl>()) {
  for (auto& name : names)
    impl_->known.emplace(name, impl_->make(name));
}

runtime_metrics::~runtime_metrics() {
  // nop
}

runtime_metrics::task_instruments&
runtime_metrics::of(const std::string& name) {
  if (auto i = impl_->known.find(name); i != impl_->known.end())
    return i->second;
  std::lock_guard<std::mutex> guard{impl_->mtx};
  auto i = impl_->late.find(name);
  if (i == impl_->late.end())
    i = impl_->late.emplace(name, impl_->make(name)).first;
  return i->second;
}

void runtime_metrics::claimed(task_instruments& task) {
  task.claimed->Increment();
}

void runtime_metrics::picked_up(task_instruments& task,
                                std::chrono::microseconds waited) {
  task.pickup->Observe(std::chrono::duration<double>(waited).count());
}

void runtime_metrics::ran(task_instruments& task,
                          std::chrono::steady_clock::duration d) {
  // A histogram takes a lock: only for an endpoint that serves it.
  if (impl_->served.load(std::memory_order_relaxed))
    task.duration->Observe(std::chrono::duration<double>(d).count());
}

void runtime_metrics::ended(task_instruments& task, ending how) {
  task.ended[static_cast<std::size_t>(how)]->Increment();
}

void runtime_metrics::claim_returned() {
  impl_->claims.Increment();
}

void runtime_metrics::leases_lost(std::int64_t n) {
  impl_->lost.Increment(static_cast<double>(n));
}

void runtime_metrics::cancels_at_renewal(std::int64_t n) {
  impl_->cancels_at_renewal.Increment(static_cast<double>(n));
}

void runtime_metrics::restarted() {
  impl_->restarts.Increment();
}

runtime_totals runtime_metrics::totals() const {
  using ending = runtime_metrics::ending;
  auto value = [](const Counter* x) {
    return static_cast<std::int64_t>(x->Value());
  };
  runtime_totals result;
  auto add = [&](const task_instruments& x) {
    auto ended = [&](ending how) {
      return value(x.ended[static_cast<std::size_t>(how)]);
    };
    result.claimed += value(x.claimed);
    result.completed += ended(ending::completed);
    result.failed += ended(ending::failed) + ended(ending::retried)
                     + ended(ending::cancelled);
    result.released += ended(ending::released);
  };
  for (auto& kvp : impl_->known)
    add(kvp.second);
  {
    std::lock_guard<std::mutex> guard{impl_->mtx};
    for (auto& kvp : impl_->late)
      add(kvp.second);
  }
  result.claims = value(&impl_->claims);
  result.lost = value(&impl_->lost);
  result.cancels_at_renewal = value(&impl_->cancels_at_renewal);
  result.restarts = value(&impl_->restarts);
  return result;
}

void runtime_metrics::connection_opened() {
  impl_->connections.Increment();
}

void runtime_metrics::connection_closed() {
  impl_->connections.Decrement();
}

namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

class runtime_collectable : public prometheus::Collectable {
public:
  runtime_collectable(std::shared_ptr<prometheus::Registry> registry,
                      std::function<std::optional<runtime_sample>()> sample)
    : registry_(std::move(registry)), sample_(std::move(sample)) {
    // nop
  }

  std::vector<MetricFamily> Collect() const override {
    auto result = registry_->Collect();
    auto x = sample_();
    if (!x)
      return result;
    auto one = [&](const char* name, const char* help, MetricType type,
                   std::int64_t value) {
      ClientMetric m;
      m.gauge.value = static_cast<double>(value);
      result.push_back({name, help, type, {m}});
    };
    one("cafmq_held", "Attempts claimed and not yet out of their handlers",
        MetricType::Gauge, x->held);
    one("cafmq_running", "Attempts whose handlers run now", MetricType::Gauge,
        x->running);
    one("cafmq_handler_slots",
        "Handler slots: at most this many handlers run at once "
        "(max_concurrency)",
        MetricType::Gauge, x->slots);
    one("cafmq_channel_actors", "Channel actors alive", MetricType::Gauge,
        x->channels);
    return result;
  }

private:
  std::shared_ptr<prometheus::Registry> registry_;
  std::function<std::optional<runtime_sample>()> sample_;
};

} // namespace

std::shared_ptr<prometheus::Collectable> runtime_metrics::collectable(
  std::function<std::optional<runtime_sample>()> sample) {
  impl_->served.store(true, std::memory_order_relaxed);
  return std::make_shared<runtime_collectable>(impl_->registry,
                                               std::move(sample));
}

} // namespace cafmq::actors
