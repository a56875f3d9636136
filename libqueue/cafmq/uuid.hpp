// SPDX-License-Identifier: BSD-3-Clause
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace cafmq {

/// A task id: an RFC 4122 UUID. Random ids are version 4.
class uuid {
public:
  /// The 16 bytes in the order of the text form.
  using bytes_type = std::array<std::uint8_t, 16>;

  constexpr uuid() noexcept : bytes_{} {
    // nop
  }

  /// The UUID with these bytes; the default constructor makes the nil UUID.
  explicit constexpr uuid(const bytes_type& bytes) noexcept : bytes_(bytes) {
    // nop
  }

  /// Returns a new random (version 4) UUID.
  static uuid random();

  /// Returns a new time-ordered (version 7) UUID: 48 bits of Unix time in
  /// milliseconds, 12 bits of the millisecond's fraction, then random bits;
  /// within a process each id sorts after the one made before it. Ids spawned
  /// close in time sit close in the primary-key index, which keeps a deep
  /// queue's lookups in cache.
  static uuid time_ordered();

  /// Parses the canonical 36-character form (case-insensitive).
  static std::optional<uuid> parse(std::string_view str);

  /// The 16 bytes.
  const bytes_type& bytes() const noexcept {
    return bytes_;
  }

  /// True for the all-zero UUID, which is never a task's id.
  bool nil() const noexcept;

  /// The first 8 bytes, in the host's byte order (for hashing and for
  /// comparing without a call to memcmp).
  std::uint64_t high() const noexcept {
    std::uint64_t result;
    std::memcpy(&result, bytes_.data(), 8);
    return result;
  }

  /// The last 8 bytes, in the host's byte order.
  std::uint64_t low() const noexcept {
    std::uint64_t result;
    std::memcpy(&result, bytes_.data() + 8, 8);
    return result;
  }

  /// Compares the bytes.
  friend bool operator==(const uuid& x, const uuid& y) noexcept {
    return x.high() == y.high() && x.low() == y.low();
  }

  /// Compares the bytes.
  friend bool operator!=(const uuid& x, const uuid& y) noexcept {
    return !(x == y);
  }

  /// Orders by bytes, so time-ordered ids sort by when they were made.
  friend bool operator<(const uuid& x, const uuid& y) noexcept {
    return x.bytes_ < y.bytes_;
  }

private:
  bytes_type bytes_;
};

/// Returns the canonical lowercase 36-character form.
std::string to_string(const uuid& x);

} // namespace cafmq

template <>
/// Hashes task ids, e.g. for `std::unordered_map`.
struct std::hash<cafmq::uuid> {
  /// A hash of the 16 bytes: the two halves mixed by a multiplication, so
  /// that ids that differ only in their time bits or only in their random
  /// bits spread alike. Inline: the runtime looks attempts up by id on
  /// every message of an attempt's life.
  std::size_t operator()(const cafmq::uuid& x) const noexcept {
    auto h
      = (x.high() ^ (x.low() * 0x9e3779b97f4a7c15ULL)) * 0xff51afd7ed558ccdULL;
    return static_cast<std::size_t>(h ^ (h >> 32));
  }
};
