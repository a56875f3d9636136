// SPDX-License-Identifier: BSD-3-Clause
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace cafmq {

/// What a checkpoint saves for the next attempt of a running task.
class checkpoint {
public:
  /// New JSON payload for the next attempt.
  template <class T>
  checkpoint& json(const T& x) {
    json_ = nlohmann::json(x).dump();
    return *this;
  }

  /// New JSON payload as text; text that is not JSON fails the checkpoint
  /// with `errc::invalid_json`.
  checkpoint& raw_json(std::string x);

  /// New binary payload for the next attempt.
  checkpoint& bytes(std::string x);

  /// Attempts to add; during the final attempt this is what grants a retry.
  checkpoint& extra_retries(int x);

  /// Also extends the lease to at least now + `x`.
  checkpoint& keep_alive(std::chrono::microseconds x);

  /// The new JSON payload, if one was set.
  const std::optional<std::string>& raw_json() const noexcept {
    return json_;
  }

  /// The new binary payload, if one was set.
  const std::optional<std::string>& bytes() const noexcept {
    return bytes_;
  }

  /// The attempts to add; 0 unless set (the database ignores a negative value).
  int extra_retries() const noexcept {
    return extra_retries_;
  }

  /// The lease extension (to at least now + this), if one was set.
  const std::optional<std::chrono::microseconds>& keep_alive() const noexcept {
    return keep_alive_;
  }

private:
  std::optional<std::string> json_;
  std::optional<std::string> bytes_;
  int extra_retries_ = 0;
  std::optional<std::chrono::microseconds> keep_alive_;
};

} // namespace cafmq
