// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// Durations as people write them: on the command line, in the dashboard's
// filters and in the CLI's node commands.

#include <chrono>
#include <optional>
#include <string_view>

namespace cafmq {

/// The duration `x` names: 1 to 9 digits and a unit, `ms`, `s`, `m` or
/// `min`, `h` or `d` (none: seconds), e.g. 250ms, 90, 15min, 7d. Nothing for
/// anything else (a sign, a space, a fraction, more digits).
std::optional<std::chrono::microseconds> parse_duration(std::string_view x);

} // namespace cafmq
