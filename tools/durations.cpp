// SPDX-License-Identifier: BSD-3-Clause
#include "durations.hpp"

#include <cstdio>

namespace cafmq::cli {

std::string format_duration(std::chrono::microseconds x) {
  auto ms = x.count() / 1000;
  char buf[32];
  if (ms < 1000)
    std::snprintf(buf, sizeof(buf), "%lldms", static_cast<long long>(ms));
  else if (ms < 60'000)
    std::snprintf(buf, sizeof(buf), "%.1fs", ms / 1000.0);
  else if (ms < 3'600'000)
    std::snprintf(buf, sizeof(buf), "%lldm%02llds",
                  static_cast<long long>(ms / 60'000),
                  static_cast<long long>(ms / 1000 % 60));
  else if (ms < 86'400'000)
    std::snprintf(buf, sizeof(buf), "%lldh%02lldm",
                  static_cast<long long>(ms / 3'600'000),
                  static_cast<long long>(ms / 60'000 % 60));
  else
    std::snprintf(buf, sizeof(buf), "%lldd%02lldh",
                  static_cast<long long>(ms / 86'400'000),
                  static_cast<long long>(ms / 3'600'000 % 24));
  return buf;
}

} // namespace cafmq::cli
