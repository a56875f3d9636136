// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// Where and how a runner publishes its control interface to other nodes
// (`cafmq.publish.*` in the config), and where a client finds a node. Plain
// structs: no CAF headers needed to fill them in.

#include <cstdint>
#include <optional>
#include <string>

namespace cafmq::actors {

/// Certificate, key and CA files for mutual TLS (libcaf_openssl). Setting
/// any of them turns TLS on: both ends then present a certificate that
/// chains to the other's CA (CAF checks no host name).
struct tls_options {
  /// PEM certificate chain of this node.
  std::string certificate;
  /// PEM private key of `certificate`.
  std::string key;
  /// PEM file of the CAs whose certificates this node accepts.
  std::string cafile;
  /// Passphrase of `key`, if it has one.
  std::string passphrase;

  /// True when the certificate, key or CA file is set (a passphrase alone does
  /// not count).
  bool enabled() const noexcept {
    return !certificate.empty() || !key.empty() || !cafile.empty();
  }

  /// True when the certificate, key and CA file are all set: what TLS needs
  /// on either end (a node accepts only peers with a certificate of its CA).
  bool complete() const noexcept {
    return !certificate.empty() && !key.empty() && !cafile.empty();
  }
};

/// Publishing a runner's control interface (node_actor behind a gate_actor).
struct node_options {
  /// Address to listen on; loopback unless configured otherwise.
  std::string host = "127.0.0.1";
  /// TCP port; none: not published (the default); 0: any free port.
  std::optional<std::uint16_t> port;
  /// Shared secret a peer must prove it knows (see node.hpp). Required
  /// without TLS; optional with TLS, where the certificate check comes
  /// first.
  std::string secret;
  /// Mutual TLS; on when any of its files is set.
  tls_options tls;

  /// True when a port is set: the runner publishes.
  bool enabled() const noexcept {
    return port.has_value();
  }
};

/// A published node, as a client sees it.
struct node_endpoint {
  /// The node's address.
  std::string host = "127.0.0.1";
  /// The node's TCP port.
  std::uint16_t port = 0;
  /// The node's shared secret (see node.hpp).
  std::string secret;
  /// Connect with TLS (the system needs the openssl manager and its
  /// certificate options, see enable_nodes).
  bool tls = false;
};

} // namespace cafmq::actors
