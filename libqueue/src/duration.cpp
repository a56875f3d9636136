// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/duration.hpp"

#include <cctype>
#include <string>

namespace cafmq {

std::optional<std::chrono::microseconds> parse_duration(std::string_view x) {
  std::size_t digits = 0;
  while (digits < x.size()
         && std::isdigit(static_cast<unsigned char>(x[digits])))
    ++digits;
  // At most 9 digits: no overflow of 64 bits in microseconds for any unit.
  if (digits == 0 || digits > 9)
    return std::nullopt;
  auto n = std::stoll(std::string{x.substr(0, digits)});
  auto unit = x.substr(digits);
  using namespace std::chrono;
  if (unit.empty() || unit == "s")
    return duration_cast<microseconds>(seconds{n});
  if (unit == "ms")
    return duration_cast<microseconds>(milliseconds{n});
  if (unit == "m" || unit == "min")
    return duration_cast<microseconds>(minutes{n});
  if (unit == "h")
    return duration_cast<microseconds>(hours{n});
  if (unit == "d")
    return duration_cast<microseconds>(hours{24 * n});
  return std::nullopt;
}

} // namespace cafmq
