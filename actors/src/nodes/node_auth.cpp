// SPDX-License-Identifier: BSD-3-Clause
#include "nodes/node_auth.hpp"

#include <memory>

#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>

#include "cafmq/actors/node.hpp"
#include "cafmq/detail/hex.hpp"
#include "cafmq/error.hpp"

namespace cafmq::actors {

namespace {

std::string openssl_reason() {
  auto code = ERR_get_error();
  ERR_clear_error();
  if (code == 0)
    return "unknown OpenSSL error";
  char buf[256];
  ERR_error_string_n(code, buf, sizeof(buf));
  return buf;
}

int passphrase_cb(char* buf, int size, int, void* ptr) {
  auto& pass = *static_cast<const std::string*>(ptr);
  auto n = std::min(static_cast<int>(pass.size()), size);
  std::copy_n(pass.data(), n, buf);
  return n;
}

} // namespace

std::string node_proof(const std::string& nonce, const std::string& secret) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx{EVP_MD_CTX_new(),
                                                              EVP_MD_CTX_free};
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1
      || EVP_DigestUpdate(ctx.get(), nonce.data(), nonce.size()) != 1
      || EVP_DigestUpdate(ctx.get(), secret.data(), secret.size()) != 1
      || EVP_DigestFinal_ex(ctx.get(), digest, &len) != 1)
    return {};
  return cafmq::detail::to_hex(digest, len);
}

std::string make_nonce() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1)
    return {};
  return cafmq::detail::to_hex(bytes, sizeof(bytes));
}

bool same_proof(const std::string& x, const std::string& y) noexcept {
  return x.size() == y.size() && !x.empty()
         && CRYPTO_memcmp(x.data(), y.data(), x.size()) == 0;
}

caf::error check_tls_files(const tls_options& tls) {
  auto invalid = [](std::string what) {
    return make_error(errc::invalid_argument, std::move(what));
  };
  if (tls.certificate.empty() || tls.key.empty() || tls.cafile.empty())
    return invalid("TLS needs openssl.certificate, openssl.key and "
                   "openssl.cafile together");
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx{
    SSL_CTX_new(TLS_method()), SSL_CTX_free};
  if (!ctx)
    return invalid("cannot create a TLS context: " + openssl_reason());
  auto pass = tls.passphrase;
  SSL_CTX_set_default_passwd_cb(ctx.get(), passphrase_cb);
  SSL_CTX_set_default_passwd_cb_userdata(ctx.get(), &pass);
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), tls.certificate.c_str())
      != 1)
    return invalid("cannot load the TLS certificate " + tls.certificate + ": "
                   + openssl_reason());
  if (SSL_CTX_use_PrivateKey_file(ctx.get(), tls.key.c_str(), SSL_FILETYPE_PEM)
      != 1)
    return invalid("cannot load the TLS key " + tls.key + ": "
                   + openssl_reason());
  if (SSL_CTX_check_private_key(ctx.get()) != 1)
    return invalid("the TLS key " + tls.key + " does not belong to "
                   + tls.certificate + ": " + openssl_reason());
  if (SSL_CTX_load_verify_locations(ctx.get(), tls.cafile.c_str(), nullptr)
      != 1)
    return invalid("cannot load the TLS CA file " + tls.cafile + ": "
                   + openssl_reason());
  return caf::none;
}

std::string default_node_name() {
  char host[256] = "localhost";
  gethostname(host, sizeof(host) - 1);
  return std::string{host} + ":" + std::to_string(getpid());
}

} // namespace cafmq::actors
