// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// The gate's cryptography (OpenSSL): nonces, proofs, their comparison, and
// the check of TLS files before they are published.

#include <string>

#include <caf/error.hpp>

#include "cafmq/actors/node_options.hpp"

namespace cafmq::actors {

/// 32 random bytes from OpenSSL's CSPRNG, as lowercase hex.
std::string make_nonce();

/// A runner's or worker's node name when none is configured: host:pid.
std::string default_node_name();

/// Compares in time that depends only on the lengths.
bool same_proof(const std::string& x, const std::string& y) noexcept;

/// Loads the certificate chain, the key (with its passphrase) and the CA
/// file the way the openssl manager will, and checks that the key belongs
/// to the certificate. `errc::invalid_argument` naming the file otherwise.
caf::error check_tls_files(const tls_options& tls);

} // namespace cafmq::actors
