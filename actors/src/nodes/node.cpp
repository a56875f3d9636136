// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/actors/node.hpp"

#include <cerrno>
#include <map>
#include <thread>

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/openssl/all.hpp>

#include "cafmq/error.hpp"
#include "nodes/node_auth.hpp"
#include "nodes/tls_refusals.hpp"

namespace cafmq::actors {

namespace {

// -- node actor ---------------------------------------------------------------

// Forwards the runtime's public interface; quits with the runtime.
node_actor::behavior_type node(node_actor::pointer self, runtime_actor rt) {
  self->monitor(rt);
  self->set_down_handler([=](caf::down_msg& msg) {
    if (msg.source == rt.address())
      self->quit(msg.reason);
  });
  return {
    [=](stop_atom) { return self->delegate(rt, stop_atom::value); },
    [=](stats_atom) { return self->delegate(rt, stats_atom::value); },
    [=](cancel_atom, const uuid& id) {
      return self->delegate(rt, cancel_atom::value, id);
    },
    [=](status_atom, const uuid& id) {
      return self->delegate(rt, status_atom::value, id);
    },
    [=](watch_atom, const uuid& id, const watcher_actor& watcher) {
      self->send(rt, watch_atom::value, id, watcher);
    },
    [=](pause_atom, const std::string& name) {
      return self->delegate(rt, pause_atom::value, name);
    },
    [=](resume_atom, const std::string& name) {
      return self->delegate(rt, resume_atom::value, name);
    },
    [=](pause_atom, const std::string& kind, const std::string& name) {
      return self->delegate(rt, pause_atom::value, kind, name);
    },
    [=](resume_atom, const std::string& kind, const std::string& name) {
      return self->delegate(rt, resume_atom::value, kind, name);
    },
    [=](spawn_atom, const spawn_request& req) {
      return self->delegate(rt, spawn_atom::value, req);
    },
    [=](spawn_atom, const std::vector<spawn_request>& reqs) {
      return self->delegate(rt, spawn_atom::value, reqs);
    },
    [=](subscribe_atom, const event_filter& filter,
        const event_actor& subscriber) {
      return self->delegate(rt, subscribe_atom::value, filter, subscriber);
    },
    [=](join_atom, const worker_offer& offer, const worker_actor& worker) {
      return self->delegate(rt, join_atom::value, offer, worker);
    },
  };
}

// -- gate actor ---------------------------------------------------------------

// A nonce not answered within this long is forgotten; at most this many
// wait at once (a flood of hellos cannot grow the gate without bound).
constexpr auto nonce_lifetime = std::chrono::seconds{60};
constexpr size_t max_nonces = 4096;

struct gate_state {
  node_actor node;
  std::string secret;
  logger log;
  struct issued {
    std::string nonce;
    std::chrono::steady_clock::time_point at;
  };
  std::map<caf::actor_addr, issued> nonces;
  static inline const char* name = "cafmq.gate";

  void forget_old() {
    auto now = std::chrono::steady_clock::now();
    for (auto i = nonces.begin(); i != nonces.end();)
      if (now - i->second.at > nonce_lifetime)
        i = nonces.erase(i);
      else
        ++i;
  }
};

using gate_ptr = gate_actor::stateful_pointer<gate_state>;

std::string peer_of(gate_ptr self) {
  auto& sender = self->current_sender();
  return sender ? to_string(sender->node()) : std::string{"anonymous"};
}

gate_actor::behavior_type gate(gate_ptr self, node_actor node,
                               std::string secret, logger log) {
  auto& st = self->state;
  st.node = node;
  st.secret = std::move(secret);
  st.log = std::move(log);
  self->monitor(node);
  self->set_down_handler([=](caf::down_msg&) { self->quit(); });
  auto refuse = [=](const char* why) {
    self->state.log(log_level::warning, "refused a peer",
                    {{"peer", peer_of(self)}, {"reason", why}});
    return make_error(errc::access_denied, why);
  };
  return {
    [=](hello_atom) -> caf::result<std::string> {
      auto& st = self->state;
      auto sender = caf::actor_cast<caf::actor_addr>(self->current_sender());
      if (!sender)
        return refuse("a hello without a sender");
      st.forget_old();
      if (st.nonces.size() >= max_nonces)
        return refuse("too many unanswered nonces");
      auto nonce = make_nonce();
      if (nonce.empty())
        return make_error(errc::access_denied, "no random nonce available");
      st.nonces[sender] = {nonce, std::chrono::steady_clock::now()};
      return nonce;
    },
    [=](auth_atom, const std::string& proof) -> caf::result<node_actor> {
      auto& st = self->state;
      auto sender = caf::actor_cast<caf::actor_addr>(self->current_sender());
      auto i = st.nonces.find(sender);
      if (i == st.nonces.end())
        return refuse("no nonce was handed to this peer (say hello first)");
      auto issued = std::move(i->second);
      st.nonces.erase(i);
      if (std::chrono::steady_clock::now() - issued.at > nonce_lifetime)
        return refuse("the nonce expired");
      if (!same_proof(proof, node_proof(issued.nonce, st.secret)))
        return refuse("wrong proof of the shared secret");
      st.log(log_level::info, "peer authenticated", {{"peer", peer_of(self)}});
      return st.node;
    },
  };
}

caf::error invalid(std::string what) {
  return make_error(errc::invalid_argument, std::move(what));
}

// Whether a TCP connection to host:port opens within `timeout` (and is
// closed at once): tells a node that refused a TLS handshake from one that
// is not there.
bool tcp_port_open(const std::string& host, uint16_t port,
                   caf::timespan timeout) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found)
      != 0)
    return false;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
  auto open = false;
  for (auto* a = found; a != nullptr && !open; a = a->ai_next) {
    auto fd
      = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
               a->ai_protocol);
    if (fd < 0)
      continue;
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      open = true;
    } else if (errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int soerr = 0;
      socklen_t len = sizeof(soerr);
      open = poll(&p, 1, static_cast<int>(ms.count())) == 1
             && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) == 0
             && soerr == 0;
    }
    close(fd);
  }
  freeaddrinfo(found);
  return open;
}

} // namespace

// -- set-up -------------------------------------------------------------------

node_actor spawn_node(caf::actor_system& sys, const runtime_actor& runtime) {
  return sys.spawn(node, runtime);
}

gate_actor spawn_gate(caf::actor_system& sys, const node_actor& node,
                      std::string secret, logger log) {
  return sys.spawn(gate, node, std::move(secret), std::move(log));
}

void enable_nodes(caf::actor_system_config& cfg, const tls_options& tls) {
  cfg.load<caf::io::middleman>();
  // Incomplete TLS options would end the process when CAF's openssl module
  // starts ("No certificate configured"): connect_node and publish_node
  // report them instead.
  if (tls.complete()) {
    cfg.load<caf::openssl::manager>();
    cfg.openssl_certificate = tls.certificate;
    cfg.openssl_key = tls.key;
    cfg.openssl_cafile = tls.cafile;
    cfg.openssl_passphrase = tls.passphrase;
  }
  cfg.set("middleman.heartbeat-interval", caf::timespan{node_heartbeat});
  cfg.set("middleman.connection-timeout",
          caf::timespan{node_connection_timeout});
}

caf::error check_node_options(caf::actor_system& sys,
                              const node_options& opts) {
  if (!opts.enabled())
    return caf::none;
  if (opts.host.empty())
    return invalid("cafmq.publish.host is empty");
  auto& tls = opts.tls;
  if (!tls.enabled() && opts.secret.empty())
    return invalid("publishing without TLS needs a shared secret "
                   "(cafmq.publish.secret)");
  if (!sys.has_middleman())
    return invalid("publishing needs caf::io::middleman loaded in the actor "
                   "system (see enable_nodes)");
  if (!tls.enabled())
    return caf::none;
  if (!tls.complete())
    return check_tls_files(tls); // says what TLS needs
  if (!sys.has_openssl_manager())
    return invalid("publishing with TLS needs caf::openssl::manager loaded "
                   "in the actor system (see enable_nodes)");
  auto& sys_cfg = sys.config();
  if (sys_cfg.openssl_certificate != tls.certificate
      || sys_cfg.openssl_key != tls.key || sys_cfg.openssl_cafile != tls.cafile
      || sys_cfg.openssl_passphrase != tls.passphrase)
    return invalid("the actor system's openssl options differ from "
                   "the node's TLS options (see enable_nodes)");
  return check_tls_files(tls);
}

caf::expected<std::uint16_t> publish_node(caf::actor_system& sys,
                                          const runtime_actor& runtime,
                                          const node_options& opts,
                                          const logger& log) {
  if (!opts.enabled())
    return invalid("no port configured for publishing (cafmq.publish.port)");
  if (auto err = check_node_options(sys, opts))
    return err;
  auto n = spawn_node(sys, runtime);
  auto g = spawn_gate(sys, n, opts.secret, log);
  auto tls = opts.tls.enabled();
  auto port
    = tls ? caf::openssl::publish(g, *opts.port, opts.host.c_str(), true)
          : sys.middleman().publish(g, *opts.port, opts.host.c_str(), true);
  if (!port) {
    caf::anon_send_exit(g, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(n, caf::exit_reason::user_shutdown);
    return make_error(errc::invalid_argument,
                      "cannot publish the node on " + opts.host + ":"
                        + std::to_string(*opts.port) + ": "
                        + sys.render(port.error()));
  }
  if (tls)
    log_tls_refusals(*port, log);
  // The port closes when the gate ends (with the runtime).
  auto mm = tls ? sys.openssl_manager().actor_handle()
                : sys.middleman().actor_handle();
  caf::actor_cast<caf::abstract_actor*>(g)->attach_functor(
    [mm, addr = g.address(), bound = *port, tls] {
      if (tls)
        forget_tls_refusals(bound);
      caf::anon_send(mm, caf::unpublish_atom::value, addr, bound);
    });
  log(log_level::info, "node published",
      {{"host", opts.host}, {"port", *port}, {"tls", tls ? "on" : "off"}});
  return *port;
}

// -- client -------------------------------------------------------------------

caf::expected<node_actor> connect_node(caf::actor_system& sys,
                                       const node_endpoint& where,
                                       caf::timespan timeout) {
  auto unreachable = [&](std::string why) {
    return make_error(errc::node_unreachable, where.host + ":"
                                                + std::to_string(where.port)
                                                + ": " + std::move(why));
  };
  if (!sys.has_middleman())
    return invalid("connecting to a node needs caf::io::middleman loaded "
                   "(see enable_nodes)");
  if (where.tls && !sys.has_openssl_manager())
    return invalid("connecting with TLS needs caf::openssl::manager, which "
                   "enable_nodes loads when given a client certificate, its "
                   "key and the CA file (a node accepts only peers with a "
                   "certificate of its CA)");
  // middleman::remote_actor waits without a bound: ask its actor ourselves.
  auto mm = where.tls ? sys.openssl_manager().actor_handle()
                      : sys.middleman().actor_handle();
  caf::scoped_actor self{sys};
  caf::strong_actor_ptr found;
  caf::error err;
  // A node that accepts the connection and drops it in the handshake is
  // alive and refuses us: TLS without a client certificate, with one its CA
  // did not sign, or TLS on one side only. (A dead node refuses the
  // connection itself; a hung one lets it time out.) A node that was dying
  // as we connected drops it too, so a drop counts only when it repeats.
  auto refused = [&] {
    return make_error(
      errc::access_denied,
      where.host + ":" + std::to_string(where.port)
        + ": the handshake failed with a node that takes connections: it "
          "refused this peer, or this peer refused its certificate (with "
          "TLS: no client certificate, certificates of different CAs, or "
          "TLS on one side only)");
  };
  for (int tries = 1;; ++tries) {
    auto dropped = false;
    self->request(mm, timeout, caf::connect_atom::value, where.host, where.port)
      .receive(
        [&](const caf::node_id&, caf::strong_actor_ptr& ptr,
            const std::set<std::string>& ifs) {
          if (!ptr)
            err = unreachable("nothing is published on this port");
          else if (!sys.assignable<gate_actor>(ifs))
            err = unreachable("the actor published there is not a cafmq "
                              "gate (or its message types differ)");
          else
            found = std::move(ptr);
        },
        [&](caf::error& x) {
          if (x == caf::sec::disconnect_during_handshake)
            dropped = true;
          // A TLS handshake that fails on our side (the node's certificate
          // is not of our CA) ends as a failed connect, like a closed
          // port: a port that still takes connections is a refusal.
          else if (where.tls && x == caf::sec::cannot_connect_to_node
                   && tcp_port_open(where.host, where.port, timeout))
            err = refused();
          else
            err = unreachable(sys.render(x));
        });
    if (!dropped)
      break;
    if (tries == 2) {
      err = refused();
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{100});
  }
  if (err)
    return err;
  auto gate = caf::actor_cast<gate_actor>(std::move(found));
  std::string nonce;
  self->request(gate, timeout, hello_atom::value)
    .receive([&](std::string& x) { nonce = std::move(x); },
             [&](caf::error& x) { err = std::move(x); });
  if (err)
    return code_of(err) != errc::none ? err : unreachable(sys.render(err));
  node_actor result;
  self
    ->request(gate, timeout, auth_atom::value, node_proof(nonce, where.secret))
    .receive([&](node_actor& x) { result = std::move(x); },
             [&](caf::error& x) { err = std::move(x); });
  if (err)
    return code_of(err) != errc::none ? err : unreachable(sys.render(err));
  return result;
}

} // namespace cafmq::actors
