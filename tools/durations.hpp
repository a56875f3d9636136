// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// Durations on the command line, written: 850ms, 42s, 3m12s, 5h03m, 2d04h.

#include <chrono>
#include <optional>
#include <string>

#include "cafmq/duration.hpp"

namespace cafmq::cli {

// Parsing: cafmq::parse_duration (cafmq/duration.hpp), shared with the
// dashboard.

/// `x` in the largest unit that shows it whole enough: 850ms, 42s, 3m12s,
/// 5h03m, 2d04h.
std::string format_duration(std::chrono::microseconds x);

} // namespace cafmq::cli
