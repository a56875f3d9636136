// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// Durations on the command line: 250ms, 30s, 5m, 2h, 7d; a plain number is
// seconds.

#include <chrono>
#include <optional>
#include <string>

namespace cafmq::cli {

/// The duration `x` names, or nothing if it is not one (or negative).
std::optional<std::chrono::nanoseconds> parse_duration(const std::string& x);

/// `x` in the largest unit that shows it whole enough: 850ms, 42s, 3m12s,
/// 5h03m, 2d04h.
std::string format_duration(std::chrono::microseconds x);

} // namespace cafmq::cli
