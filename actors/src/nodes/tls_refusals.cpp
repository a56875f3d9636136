// SPDX-License-Identifier: BSD-3-Clause
//
// CAF 0.17.6's openssl module gives the application no word of a TLS
// handshake it refused: the session creates its own SSL_CTX, fails the
// handshake inside the multiplexer and closes the connection. Its one
// call that only a context verifying its peers makes is
//   SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
//                      nullptr)
// so cafmq defines SSL_CTX_set_verify: it calls OpenSSL's own, and on such
// a context that has no info callback yet it sets one. The callback
// watches the fatal alerts of server-side handshakes and logs those on the
// ports registered here (a node published with TLS), with the peer's
// address. Every other context and connection is left as OpenSSL leaves
// it.
//
// This works where the dynamic linker finds cafmq's definition before
// libssl's, which is so when cafmq is linked statically into the program,
// or as a shared library ahead of libssl; log_tls_refusals() checks it
// and says when it is not so. A program that links OpenSSL statically
// cannot link this file (two definitions): it is the price of a log line
// CAF has no hook for.

#include "nodes/tls_refusals.hpp"

#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <openssl/opensslv.h>
#include <openssl/ssl.h>

namespace cafmq::actors {

namespace tls_refusals_impl {

std::mutex registry_mutex;
std::map<std::uint16_t, logger>& ports() {
  static std::map<std::uint16_t, logger> instance;
  return instance;
}

using set_verify_fn = void (*)(SSL_CTX*, int, SSL_verify_cb);

// OpenSSL's own SSL_CTX_set_verify: looked up in libssl itself.
set_verify_fn openssl_set_verify() {
  static set_verify_fn fn = [] {
    void* found = nullptr;
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(&SSL_CTX_new), &info) != 0
        && info.dli_fname != nullptr
        && std::string{info.dli_fname}.find("libssl") != std::string::npos)
      if (auto h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD))
        found = dlsym(h, "SSL_CTX_set_verify");
    if (found == nullptr) {
      auto soname = "libssl.so." + std::to_string(OPENSSL_VERSION_MAJOR);
      if (auto h = dlopen(soname.c_str(), RTLD_LAZY | RTLD_NOLOAD))
        found = dlsym(h, "SSL_CTX_set_verify");
    }
    if (found == nullptr)
      found = dlsym(RTLD_NEXT, "SSL_CTX_set_verify");
    return reinterpret_cast<set_verify_fn>(found);
  }();
  return fn;
}

std::string address_of(const sockaddr_storage& x) {
  char host[INET6_ADDRSTRLEN] = "?";
  std::uint16_t port = 0;
  if (x.ss_family == AF_INET) {
    auto& in = reinterpret_cast<const sockaddr_in&>(x);
    inet_ntop(AF_INET, &in.sin_addr, host, sizeof(host));
    port = ntohs(in.sin_port);
  } else if (x.ss_family == AF_INET6) {
    auto& in = reinterpret_cast<const sockaddr_in6&>(x);
    inet_ntop(AF_INET6, &in.sin6_addr, host, sizeof(host));
    port = ntohs(in.sin6_port);
  }
  return std::string{host} + ":" + std::to_string(port);
}

std::uint16_t port_of(const sockaddr_storage& x) {
  if (x.ss_family == AF_INET)
    return ntohs(reinterpret_cast<const sockaddr_in&>(x).sin_port);
  if (x.ss_family == AF_INET6)
    return ntohs(reinterpret_cast<const sockaddr_in6&>(x).sin6_port);
  return 0;
}

// A fatal alert in a server-side handshake on a registered port: logged.
void on_tls_info(const SSL* ssl, int where, int value) {
  if ((where & SSL_CB_ALERT) == 0 || !SSL_is_server(const_cast<SSL*>(ssl))
      || SSL_is_init_finished(ssl)
      || std::string{SSL_alert_type_string(value)} != "F")
    return;
  auto fd = SSL_get_fd(ssl);
  sockaddr_storage local{};
  socklen_t len = sizeof(local);
  if (fd < 0 || getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0)
    return;
  std::unique_lock<std::mutex> guard{registry_mutex};
  auto i = ports().find(port_of(local));
  if (i == ports().end())
    return;
  auto log = i->second;
  guard.unlock();
  sockaddr_storage peer{};
  len = sizeof(peer);
  auto who = getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) == 0
               ? address_of(peer)
               : std::string{"unknown"};
  auto sent = (where & SSL_CB_WRITE) != 0;
  // OpenSSL 3.0 names no alert of TLS 1.3 (RFC 8446, 6.2).
  std::string alert = (value & 0xff) == 116 ? "certificate required"
                      : (value & 0xff) == 109
                        ? "missing extension"
                        : SSL_alert_desc_string_long(value);
  log(log_level::warning,
      sent ? "refused a TLS handshake" : "a peer refused the TLS handshake",
      {{"peer", who}, {"alert", alert}});
}

} // namespace tls_refusals_impl

using namespace tls_refusals_impl;

bool log_tls_refusals(std::uint16_t port, const logger& log) {
  // CAF's openssl module resolves SSL_CTX_set_verify as this lookup does.
  if (dlsym(RTLD_DEFAULT, "SSL_CTX_set_verify")
      != reinterpret_cast<void*>(&::SSL_CTX_set_verify)) {
    log(log_level::warning,
        "refused TLS handshakes will not be logged: libssl's "
        "SSL_CTX_set_verify comes before cafmq's in this program's link "
        "order",
        {{"port", port}});
    return false;
  }
  std::lock_guard<std::mutex> guard{registry_mutex};
  ports().insert_or_assign(port, log);
  return true;
}

void forget_tls_refusals(std::uint16_t port) {
  std::lock_guard<std::mutex> guard{registry_mutex};
  ports().erase(port);
}

} // namespace cafmq::actors

extern "C" __attribute__((visibility("default"))) void
SSL_CTX_set_verify(SSL_CTX* ctx, int mode, SSL_verify_cb callback) {
  auto set = cafmq::actors::tls_refusals_impl::openssl_set_verify();
  if (set == nullptr)
    std::abort(); // libssl without SSL_CTX_set_verify: nothing sane is left
  set(ctx, mode, callback);
  if ((mode & SSL_VERIFY_FAIL_IF_NO_PEER_CERT) != 0
      && SSL_CTX_get_info_callback(ctx) == nullptr)
    SSL_CTX_set_info_callback(ctx,
                              cafmq::actors::tls_refusals_impl::on_tls_info);
}
