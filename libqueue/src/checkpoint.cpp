// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/checkpoint.hpp"

namespace cafmq {

checkpoint& checkpoint::raw_json(std::string x) {
  json_ = std::move(x);
  return *this;
}

checkpoint& checkpoint::bytes(std::string x) {
  bytes_ = std::move(x);
  return *this;
}

checkpoint& checkpoint::extra_retries(int x) {
  extra_retries_ = x;
  return *this;
}

checkpoint& checkpoint::keep_alive(std::chrono::microseconds x) {
  keep_alive_ = x;
  return *this;
}

} // namespace cafmq
