// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/cancellation.hpp"

namespace cafmq {

std::string to_string(cancel_reason x) {
  switch (x) {
    case cancel_reason::none:
      return "none";
    case cancel_reason::cancelled:
      return "cancelled";
    case cancel_reason::timeout:
      return "timeout";
    case cancel_reason::deadline:
      return "deadline";
    case cancel_reason::shutdown:
      return "shutdown";
    case cancel_reason::lost:
      return "lost";
  }
  return "unknown";
}

void cancellation::on_cancel(std::function<void()> f) {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (!cancelled()) {
      callbacks_.push_back(std::move(f));
      return;
    }
  }
  f();
}

bool cancellation::cancel(cancel_reason why) {
  std::vector<std::function<void()>> fs;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    auto expected = cancel_reason::none;
    if (!reason_.compare_exchange_strong(expected, why))
      return false;
    fs.swap(callbacks_);
  }
  for (auto& f : fs)
    f();
  return true;
}

} // namespace cafmq
