// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// The TLS handshakes a published node refused, or that its peers refused,
// in the node's log (tls_refusals.cpp).

#include <cstdint>

#include "cafmq/actors/log.hpp"

namespace cafmq::actors {

/// Logs, to `log`, each TLS handshake on local port `port` that ends with a
/// fatal alert: one this process sent ("refused a TLS handshake": a peer
/// with no certificate, one from another CA, or no TLS at all) or one the
/// peer sent ("a peer refused the TLS handshake"), with the peer's address
/// and the alert. Returns false, and logs nothing, when the hook is not
/// where CAF's openssl module calls it (see tls_refusals.cpp).
bool log_tls_refusals(std::uint16_t port, const logger& log);

/// Stops logging the handshakes of `port`.
void forget_tls_refusals(std::uint16_t port);

} // namespace cafmq::actors
