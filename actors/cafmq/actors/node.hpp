// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// Publishing a runtime to other CAF nodes, and connecting to one.
//
// What a runner publishes is a gate (gate_actor in protocol.hpp), not the
// runtime: a peer asks the gate for a nonce (hello), answers with
// hex(SHA-256(nonce ‖ secret)) (auth) and gets the node actor (node_actor),
// which forwards the runtime's public interface and nothing internal, and
// quits when the runtime ends. A nonce is fresh for each hello, bound to
// the peer that asked for it, and used once; a wrong or missing proof is
// refused with errc::access_denied and logged. Without TLS a secret is
// required; with TLS (any certificate option set) both ends present a
// certificate of the configured CA first (libcaf_openssl's mutual TLS).
//
// Connections detect a lost peer at once when its socket closes (a killed
// process) and a hung one (socket open, no traffic) through the
// middleman's heartbeat: enable_nodes sets heartbeat-interval 1 s and
// connection-timeout 10 s. Both ends need the heartbeat, because a node
// with a connection timeout drops a silent peer.

#include <chrono>
#include <cstdint>
#include <string>

#include <caf/expected.hpp>
#include <caf/fwd.hpp>
#include <caf/timespan.hpp>

#include "cafmq/actors/log.hpp"
#include "cafmq/actors/node_options.hpp"
#include "cafmq/actors/protocol.hpp"

namespace cafmq::actors {

/// The middleman heartbeat and connection timeout that enable_nodes sets.
constexpr std::chrono::milliseconds node_heartbeat{1000};
/// A peer that sends nothing, not even a heartbeat, for this long is dropped.
constexpr std::chrono::milliseconds node_connection_timeout{10000};

/// Prepares an actor system config (before the system starts) for talking
/// to nodes: loads io::middleman, and with `tls.complete()` the openssl
/// manager and its certificate options (incomplete ones would end the
/// process when CAF's openssl module starts; connect_node and publish_node
/// report them instead); sets the heartbeat and connection timeout above.
void enable_nodes(caf::actor_system_config& cfg, const tls_options& tls = {});

/// The answer to a gate's nonce: lowercase hex of SHA-256(nonce ‖ secret).
std::string node_proof(const std::string& nonce, const std::string& secret);

/// Checks `opts` and the system it will be published in: a secret without
/// TLS, the middleman (and openssl manager) loaded, the certificate, key
/// and CA files readable and matching the system's openssl options (CAF
/// reads them only at the first connection, and aborts if they are bad).
caf::error check_node_options(caf::actor_system& sys, const node_options& opts);

/// Spawns a node actor for `runtime` behind a gate and publishes the gate
/// on opts.host and *opts.port (0: any free port). Returns the bound port.
/// With TLS, the handshakes refused on the port (a peer with no
/// certificate, one from another CA, or without TLS) and those a peer
/// refused are logged to `log` with the peer's address, until the gate
/// ends.
caf::expected<std::uint16_t> publish_node(caf::actor_system& sys,
                                          const runtime_actor& runtime,
                                          const node_options& opts,
                                          const logger& log);

/// The node actor of `runtime` (what a gate hands out); quits with it.
node_actor spawn_node(caf::actor_system& sys, const runtime_actor& runtime);

/// A gate in front of `node` that checks proofs of `secret` and logs
/// refusals to `log`; quits with the node. publish_node publishes one.
gate_actor spawn_gate(caf::actor_system& sys, const node_actor& node,
                      std::string secret, logger log);

/// Connects to a published node and authenticates: every step bounded by
/// `timeout`. Errors: errc::node_unreachable (nothing listens, TLS or
/// interface mismatch, no answer in time), errc::access_denied (refused).
caf::expected<node_actor>
connect_node(caf::actor_system& sys, const node_endpoint& where,
             caf::timespan timeout = std::chrono::seconds{10});

} // namespace cafmq::actors
