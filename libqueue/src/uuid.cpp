// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/uuid.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>

#include "cafmq/detail/hex.hpp"

namespace cafmq {

uuid uuid::random() {
  // One generator per thread, seeded from the OS once.
  thread_local std::mt19937_64 gen{[] {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd(), rd(), rd(), rd(), rd()};
    return std::mt19937_64{seq};
  }()};
  bytes_type bytes;
  for (size_t i = 0; i < bytes.size(); i += 8) {
    auto x = gen();
    for (size_t j = 0; j < 8; ++j)
      bytes[i + j] = static_cast<std::uint8_t>(x >> (j * 8));
  }
  bytes[6] = static_cast<std::uint8_t>((bytes[6] & 0x0F) | 0x40);
  bytes[8] = static_cast<std::uint8_t>((bytes[8] & 0x3F) | 0x80);
  return uuid{bytes};
}

uuid uuid::time_ordered() {
  // 48 bits of milliseconds, then 12 bits of the millisecond's fraction
  // (RFC 9562, method 3), bumped past the last id this process made: ids
  // made one after the other sort in that order, even within a microsecond.
  static std::atomic<std::uint64_t> last{0};
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(
              std::chrono::system_clock::now().time_since_epoch())
              .count();
  auto stamp = (static_cast<std::uint64_t>(us / 1000) << 12)
               | static_cast<std::uint64_t>((us % 1000) * 4096 / 1000);
  auto prev = last.load(std::memory_order_relaxed);
  while (!last.compare_exchange_weak(prev, std::max(stamp, prev + 1),
                                     std::memory_order_relaxed))
    ; // prev was updated: retry with it.
  stamp = std::max(stamp, prev + 1);
  auto bytes = random().bytes();
  auto ms = stamp >> 12;
  for (size_t i = 0; i < 6; ++i)
    bytes[i] = static_cast<std::uint8_t>(ms >> (8 * (5 - i)));
  bytes[6] = static_cast<std::uint8_t>(0x70 | ((stamp >> 8) & 0x0F));
  bytes[7] = static_cast<std::uint8_t>(stamp & 0xFF);
  return uuid{bytes};
}

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

} // namespace

std::optional<uuid> uuid::parse(std::string_view str) {
  if (str.size() != 36)
    return std::nullopt;
  bytes_type bytes;
  size_t pos = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (pos == 8 || pos == 13 || pos == 18 || pos == 23) {
      if (str[pos] != '-')
        return std::nullopt;
      ++pos;
    }
    auto hi = hex_value(str[pos]);
    auto lo = hex_value(str[pos + 1]);
    if (hi < 0 || lo < 0)
      return std::nullopt;
    bytes[i] = static_cast<std::uint8_t>(hi * 16 + lo);
    pos += 2;
  }
  return uuid{bytes};
}

bool uuid::nil() const noexcept {
  for (auto b : bytes_)
    if (b != 0)
      return false;
  return true;
}

std::string to_string(const uuid& x) {
  std::string result;
  result.reserve(36);
  for (size_t i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10)
      result += '-';
    detail::append_hex(result, x.bytes()[i]);
  }
  return result;
}

} // namespace cafmq
