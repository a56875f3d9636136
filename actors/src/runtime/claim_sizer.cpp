// SPDX-License-Identifier: BSD-3-Clause
#include "runtime/claim_sizer.hpp"

#include <algorithm>

namespace cafmq::actors {

claim_sizer::claim_sizer(const runner_config& cfg)
  : min_(cfg.min_concurrency), max_(cfg.max_concurrency),
    cap_(std::max(0, cfg.prefetch)), window_(cfg.prefetch_window) {
  // nop
}

int claim_sizer::prefetch_now(time_point now) {
  if (window_.count() == 0)
    return cap_;
  if (!rate_since_) {
    rate_since_ = now;
  } else {
    auto elapsed = std::chrono::duration<double>(now - *rate_since_).count();
    if (elapsed >= 0.02) {
      auto sample = static_cast<double>(finished_since_) / elapsed;
      rate_ = 0.5 * rate_ + 0.5 * sample;
      finished_since_ = 0;
      rate_since_ = now;
    }
  }
  auto by_rate
    = static_cast<int>(std::min<double>(cap_, rate_ * window_.count()));
  return std::min(cap_, std::max(by_rate, ramp_));
}

int claim_sizer::limit(time_point now, int held) {
  auto prefetch = prefetch_now(now);
  auto result = max_ + extra_ + prefetch - held;
  if (held >= min_ && result < std::max(min_, prefetch / 4))
    return 0;
  return std::max(0, result);
}

void claim_sizer::claimed(int limit, int n, int held) {
  auto full = n == limit;
  if (full && held < min_)
    ramp_ = std::min(cap_, std::max(max_ + extra_, ramp_ * 4));
  else if (!full)
    ramp_ = 0;
}

} // namespace cafmq::actors
