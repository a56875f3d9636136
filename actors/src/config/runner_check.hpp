// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// The checks spawn_runner and runner::start make before anything starts.

#include <caf/error.hpp>

#include "cafmq/actors/runner_config.hpp"

namespace cafmq::actors {

/// Checks `cfg` and fills in what is derived (an empty registry, the node
/// name); an error names the option and the rule.
caf::error check_runner_config(runner_config& cfg);

} // namespace cafmq::actors
