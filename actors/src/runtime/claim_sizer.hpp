// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// How much the dispatcher claims: up to max_concurrency (plus the capacity
// of joined workers) + prefetch held,
// where prefetch is what the runner finishes in prefetch_window at its
// measured rate (at most cfg.prefetch). While full claims come back to a
// starved runner (start-up, bursts) the claim-ahead grows x4 per claim up to
// cfg.prefetch; a claim that was not full ends that ramp. A claim is worth
// sending when a quarter of the buffer is free or fewer than
// min_concurrency are held: claims come in large batches, and the next is
// under way before the held attempts run out.

#include <chrono>
#include <optional>

#include "cafmq/actors/runner_config.hpp"

namespace cafmq::actors {

class claim_sizer {
public:
  using time_point = std::chrono::steady_clock::time_point;

  explicit claim_sizer(const runner_config& cfg);

  /// How many attempts to claim now while `held` are held; 0: not now.
  int limit(time_point now, int held);

  /// Attempts that would start now, beyond the `held` ones: handlers of
  /// this process (max_concurrency) and of joined workers not busy.
  int free_slots(int held) const {
    return max_ + extra_ - held;
  }

  /// A claim for `limit` returned `n` attempts while `held` were held.
  void claimed(int limit, int n, int held);

  /// Joined workers run this many attempts at once beyond max_concurrency.
  void capacity(int extra) {
    extra_ = extra > 0 ? extra : 0;
  }

  /// Attempts finished (not given back): the rate estimate's input.
  void finished(long long n) {
    finished_since_ += n;
  }

private:
  int prefetch_now(time_point now);

  int min_;
  int max_;
  int extra_ = 0;
  int cap_;
  std::chrono::duration<double> window_;
  std::optional<time_point> rate_since_;
  long long finished_since_ = 0;
  // Smoothed rate in attempts per second.
  double rate_ = 0;
  int ramp_ = 0;
};

} // namespace cafmq::actors
