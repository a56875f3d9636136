// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// Hex digits, written once for every place that prints bytes: ids, secrets,
// nonces, bytea literals, JSON escapes and percent-encoded URLs.

#include <cstddef>
#include <string>

namespace cafmq::detail {

/// Appends the two hex digits of `byte`: lowercase, or uppercase with
/// `upper` (percent-encoding).
inline void append_hex(std::string& out, unsigned char byte,
                       bool upper = false) {
  const char* digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  out += digits[byte >> 4];
  out += digits[byte & 0x0f];
}

/// `size` bytes at `data` as lowercase hex digits.
inline std::string to_hex(const void* data, std::size_t size) {
  auto bytes = static_cast<const unsigned char*>(data);
  std::string result;
  result.reserve(size * 2);
  for (std::size_t i = 0; i < size; ++i)
    append_hex(result, bytes[i]);
  return result;
}

} // namespace cafmq::detail
