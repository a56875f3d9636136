// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/version.hpp"

namespace cafmq {

const char* version() noexcept {
  return CAFMQ_VERSION;
}

} // namespace cafmq
