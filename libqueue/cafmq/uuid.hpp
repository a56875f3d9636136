#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace cafmq {

/// A task id: an RFC 4122 UUID. Random ids are version 4.
class uuid {
public:
  using bytes_type = std::array<std::uint8_t, 16>;

  constexpr uuid() noexcept : bytes_{} {
    // nop
  }

  explicit constexpr uuid(const bytes_type& bytes) noexcept : bytes_(bytes) {
    // nop
  }

  /// Returns a new random (version 4) UUID.
  static uuid random();

  /// Returns a new time-ordered (version 7) UUID: 48 bits of Unix time in
  /// milliseconds, then random bits. Ids spawned close in time sit close in
  /// the primary-key index, which keeps a deep queue's lookups in cache.
  static uuid time_ordered();

  /// Parses the canonical 36-character form (case-insensitive).
  static std::optional<uuid> parse(std::string_view str);

  const bytes_type& bytes() const noexcept {
    return bytes_;
  }

  bool nil() const noexcept;

  friend bool operator==(const uuid& x, const uuid& y) noexcept {
    return x.bytes_ == y.bytes_;
  }

  friend bool operator!=(const uuid& x, const uuid& y) noexcept {
    return x.bytes_ != y.bytes_;
  }

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
struct std::hash<cafmq::uuid> {
  std::size_t operator()(const cafmq::uuid& x) const noexcept;
};
