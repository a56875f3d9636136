// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// How a spawn_builder becomes one element of `cafmq.spawn`'s JSON array:
// internal to the library (spawn_many) and its tests.

#include <string>

#include <nlohmann/json.hpp>

#include "cafmq/spawn.hpp"

namespace cafmq::detail {

struct spawn_access {
  /// Appends the request as JSON text to `out`; an id not set is drawn here.
  static void write_spec(const spawn_builder& x, std::string& out);

  /// The same element, parsed.
  static nlohmann::json to_spec(const spawn_builder& x);
};

} // namespace cafmq::detail
