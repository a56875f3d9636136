// SPDX-License-Identifier: BSD-3-Clause
#include "series.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include "cafmq/status_json.hpp"

namespace cafmq::web {

namespace {

using json = nlohmann::json;

json ms_or_null(const std::optional<std::chrono::microseconds>& x) {
  if (!x)
    return nullptr;
  return std::chrono::duration_cast<std::chrono::milliseconds>(*x).count();
}

void keep_oldest(std::optional<std::chrono::microseconds>& acc,
                 const std::optional<std::chrono::microseconds>& x) {
  if (x && (!acc || *x > *acc))
    acc = x;
}

} // namespace

namespace {

// The point of `sample` without its finished counts.
series_point make_point(const queue_sample& sample,
                        std::optional<handler_occupancy> handlers,
                        std::size_t top) {
  series_point result;
  result.at = sample.at;
  result.handlers = handlers;
  std::map<std::string, series_point::channel> by_name;
  for (auto& x : sample.live) {
    result.live += x.tasks;
    if (x.state != task_state::pending)
      continue;
    result.ready += x.ready;
    keep_oldest(result.oldest_pending, x.oldest_pending_age);
    auto& c = by_name[x.channel_name];
    c.name = x.channel_name;
    c.ready += x.ready;
    keep_oldest(c.oldest_pending, x.oldest_pending_age);
  }
  for (auto& [name, c] : by_name)
    if (c.ready > 0)
      result.channels.push_back(std::move(c));
  auto busier
    = [](const series_point::channel& x, const series_point::channel& y) {
        if (x.ready != y.ready)
          return x.ready > y.ready;
        if (x.oldest_pending != y.oldest_pending)
          return x.oldest_pending > y.oldest_pending;
        return x.name < y.name;
      };
  std::sort(result.channels.begin(), result.channels.end(), busier);
  if (result.channels.size() > top)
    result.channels.resize(top);
  return result;
}

// Gives `x` the counts of the window since `previous`.
void count(series_point& x, const series_point& previous,
           const finished_counts& finished) {
  x.seconds = std::chrono::duration<double>(x.at - previous.at).count();
  x.completed = finished.completed;
  x.failed = finished.failed;
  x.cancelled = finished.cancelled;
  // Every task spawned is live now or finished since. Pruning removes
  // finished tasks only; an expired reservation (a deleted uncommitted
  // task) can make the change negative.
  x.spawned = std::max<std::int64_t>(0, x.live - previous.live + x.completed
                                          + x.failed + x.cancelled);
}

} // namespace

json to_json(const series_point& x) {
  json channels = json::array();
  for (auto& c : x.channels)
    channels.push_back({{"channel", c.name},
                        {"ready", c.ready},
                        {"oldest_pending_ms", ms_or_null(c.oldest_pending)}});
  json handlers = nullptr;
  if (x.handlers)
    handlers = {{"running", x.handlers->running}, {"slots", x.handlers->slots}};
  return {{"at", iso8601(x.at)},
          {"seconds", x.seconds},
          {"spawned", x.spawned},
          {"completed", x.completed},
          {"failed", x.failed},
          {"cancelled", x.cancelled},
          {"live", x.live},
          {"ready", x.ready},
          {"oldest_pending_ms", ms_or_null(x.oldest_pending)},
          {"channels", std::move(channels)},
          {"handlers", std::move(handlers)}};
}

series_ring::series_ring(std::size_t capacity,
                         std::chrono::microseconds recount, std::size_t top)
  : capacity_(std::max<std::size_t>(capacity, 2)), recount_(recount),
    top_(top) {
  // nop
}

std::vector<task_status::time_point> series_ring::bounds() const {
  std::lock_guard<std::mutex> guard{mtx_};
  std::vector<task_status::time_point> result;
  if (points_.empty())
    return result;
  auto newest = points_.back().at;
  for (auto i = points_.rbegin(); i != points_.rend(); ++i) {
    if (newest - i->at > recount_)
      break;
    result.push_back(i->at);
  }
  std::reverse(result.begin(), result.end());
  return result;
}

void series_ring::add(const std::vector<task_status::time_point>& bounds,
                      const queue_sample& sample,
                      std::optional<handler_occupancy> handlers) {
  auto x = make_point(sample, handlers, top_);
  std::lock_guard<std::mutex> guard{mtx_};
  // The bounds are the times of the last points, in order: point
  // first + i + 1 gets window i.
  auto n = bounds.size();
  auto fits = n > 0 && n <= points_.size() && sample.finished.size() == n
              && points_[points_.size() - n].at == bounds.front()
              && points_.back().at == bounds.back();
  if (fits) {
    auto first = points_.size() - n;
    for (std::size_t i = 0; i + 1 < n; ++i)
      count(points_[first + i + 1], points_[first + i], sample.finished[i]);
    // A clock that went back (another server after a failover) gives no
    // window: the new point has no counts.
    if (x.at > points_.back().at)
      count(x, points_.back(), sample.finished.back());
  }
  if (points_.size() == capacity_)
    points_.pop_front();
  points_.push_back(std::move(x));
}

std::vector<series_point> series_ring::points() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return {points_.begin(), points_.end()};
}

} // namespace cafmq::web
